/// The inbox's page, served from the binary (``InboxServer``): no CDN, no external fonts, works
/// offline. The script builds every element with `createElement` and fills it with `textContent`
/// only, so nothing a sender put in a payload, token or topic is ever read as markup or script;
/// the server's content security policy allows no inline script besides.
enum InboxPage {
    /// How many notifications the page shows at most (the newest).
    static let shown = 500

    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>legacy-push inbox</title>
        <link rel="stylesheet" href="/inbox.css">
        <script src="/inbox.js" defer></script>
        <script src="/initial.js" defer></script>
        </head>
        <body>
        <header>
        <h1>Push inbox</h1>
        <span id="state">connecting…</span>
        <form id="filters">
        <input id="token" placeholder="token" autocomplete="off" spellcheck="false">
        <input id="topic" placeholder="topic" autocomplete="off" spellcheck="false">
        <select id="verdict">
        <option value="">all verdicts</option>
        <option value="accepted">accepted</option>
        <option value="rejected">rejected</option>
        </select>
        <select id="fate">
        <option value="">all fates</option>
        <option value="delivered">delivered</option>
        <option value="stored">stored</option>
        <option value="replaced">replaced</option>
        <option value="expired">expired</option>
        </select>
        <button type="button" id="clear">Clear</button>
        </form>
        </header>
        <p id="empty">Nothing received yet.</p>
        <ol id="notifications"></ol>
        </body>
        </html>

        """

    static let style = """
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f2f2f7; color: #1c1c1e; }
        header { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #d1d1d6; padding: 8px 16px;
          display: flex; flex-wrap: wrap; gap: 12px; align-items: center; }
        h1 { font-size: 18px; margin: 0; }
        #state { color: #8e8e93; }
        form { display: flex; gap: 8px; margin-left: auto; }
        input, select, button { font: inherit; padding: 4px 8px; }
        #empty { padding: 16px; color: #8e8e93; }
        ol { list-style: none; margin: 0; padding: 8px 16px; }
        li { background: #fff; border-radius: 10px; margin: 8px 0; padding: 10px 12px; box-shadow: 0 1px 2px #0002; }
        li.rejected { border-left: 4px solid #ff3b30; }
        li.accepted { border-left: 4px solid #34c759; }
        .meta { display: flex; flex-wrap: wrap; gap: 4px 12px; color: #636366; font-size: 12px; }
        .meta b { color: #1c1c1e; font-weight: 600; }
        .verdict { font-weight: 600; }
        .fate { font-weight: 600; padding: 0 6px; border-radius: 6px; background: #e5e5ea; }
        .fate-delivered { background: #d1f2db; } .fate-stored { background: #fff1c2; }
        .fate-replaced, .fate-expired { background: #ffd9d6; }
        .rejected .verdict { color: #ff3b30; }
        .accepted .verdict { color: #248a3d; }
        .device { margin: 8px 0 4px; padding: 8px 10px; background: #f7f7fa; border-radius: 12px; }
        .title { font-weight: 600; }
        .subtitle { font-weight: 500; }
        .tags { display: flex; gap: 8px; margin-top: 4px; font-size: 12px; color: #636366; }
        .silent { font-style: italic; color: #8e8e93; }
        pre { white-space: pre-wrap; word-break: break-all; background: #1c1c1e; color: #f2f2f7; padding: 8px;
          border-radius: 6px; font: 12px ui-monospace, monospace; }
        code { font: 12px ui-monospace, monospace; word-break: break-all; }
        summary { cursor: pointer; color: #007aff; font-size: 12px; }

        """

    static let script = """
        "use strict";
        // Every value shown comes from a sender: it goes into the page through textContent only.
        const shown = \(shown);
        let items = [];
        let newest = 0;
        const list = document.getElementById("notifications");
        const empty = document.getElementById("empty");
        const state = document.getElementById("state");
        const filters = { token: document.getElementById("token"), topic: document.getElementById("topic"),
          verdict: document.getElementById("verdict"), fate: document.getElementById("fate") };

        function el(tag, className, text) {
          const node = document.createElement(tag);
          if (className) node.className = className;
          if (text !== undefined && text !== null) node.textContent = String(text);
          return node;
        }

        function field(parent, name, value) {
          if (value === null || value === undefined) return;
          const span = el("span");
          span.appendChild(document.createTextNode(name + " "));
          span.appendChild(el("b", null, value));
          parent.appendChild(span);
        }

        function parsePayload(text) {
          if (typeof text !== "string") return null;
          try { const value = JSON.parse(text); return value && typeof value === "object" ? value : null; }
          catch (error) { return null; }
        }

        function deviceView(item) {
          const box = el("div", "device");
          if (item.payload === null) { box.appendChild(el("div", "silent", "payload not kept for rejections")); return box; }
          const payload = parsePayload(item.payload);
          if (!payload) { box.appendChild(el("div", "silent", "payload is not a JSON object")); return box; }
          const aps = payload.aps && typeof payload.aps === "object" ? payload.aps : {};
          const alert = aps.alert;
          let title = null, subtitle = null, body = null;
          if (typeof alert === "string") body = alert;
          else if (alert && typeof alert === "object") {
            title = alert.title ?? (alert["title-loc-key"] ? "[" + alert["title-loc-key"] + "]" : null);
            subtitle = alert.subtitle ?? null;
            body = alert.body ?? (alert["loc-key"] ? "[" + alert["loc-key"] + "]" : null);
          }
          if (title !== null) box.appendChild(el("div", "title", title));
          if (subtitle !== null) box.appendChild(el("div", "subtitle", subtitle));
          if (body !== null) box.appendChild(el("div", "body", body));
          const silent = title === null && subtitle === null && body === null && aps.badge === undefined &&
            aps.sound === undefined && aps["content-state"] === undefined;
          if (silent) box.appendChild(el("div", "silent", aps["content-available"] === 1 ?
            "silent push (content-available): wakes the app, shows nothing" : "shows nothing (no alert, badge or sound)"));
          const tags = el("div", "tags");
          if (aps.badge !== undefined) tags.appendChild(el("span", "badge", "badge " + JSON.stringify(aps.badge)));
          if (aps.sound !== undefined) tags.appendChild(el("span", "sound", "sound " +
            (typeof aps.sound === "string" ? aps.sound : JSON.stringify(aps.sound))));
          if (aps.category !== undefined) tags.appendChild(el("span", null, "category " + String(aps.category)));
          if (aps["thread-id"] !== undefined) tags.appendChild(el("span", null, "thread " + String(aps["thread-id"])));
          if (tags.childNodes.length) box.appendChild(tags);
          if (aps["content-state"] !== undefined) {
            box.appendChild(el("div", "subtitle", "Live Activity" + (aps.event ? " " + String(aps.event) : "") +
              (aps.timestamp !== undefined ? " at " + String(aps.timestamp) : "")));
            box.appendChild(el("pre", "content-state", JSON.stringify(aps["content-state"], null, 2)));
          }
          return box;
        }

        function render(item) {
          const li = el("li", item.status === "accepted" ? "accepted" : "rejected");
          li.dataset.id = String(item.id);
          const meta = el("div", "meta");
          meta.appendChild(el("span", "time", item.received));
          meta.appendChild(el("span", "verdict", item.status === "accepted" ? "accepted" : "rejected: " + item.status));
          if (item.fate) {
            const fate = el("span", "fate fate-" + item.fate, item.fate);
            li.dataset.fate = item.fate;
            meta.appendChild(fate);
          }
          field(meta, item.protocol, "connection " + item.connection);
          field(meta, "sender", item.sender);
          field(meta, "token", item.token);
          field(meta, "topic", item.topic);
          field(meta, "push type", item.pushType);
          field(meta, "priority", item.priority);
          field(meta, "expiry", item.expiry);
          field(meta, "apns-id", item.apnsId);
          field(meta, "apns-unique-id", item.uniqueId);
          li.appendChild(meta);
          li.appendChild(deviceView(item));
          const raw = el("details");
          raw.appendChild(el("summary", null, "raw"));
          if (item.payload !== null) raw.appendChild(el("pre", "payload", item.payload));
          if (item.headers) raw.appendChild(el("pre", "headers",
            Object.entries(item.headers).map(([name, value]) => name + ": " + value).join("\\n")));
          if (item.frameHex) raw.appendChild(el("pre", "frame", item.frameHex));
          raw.appendChild(el("pre", "json", JSON.stringify(item, null, 2)));
          li.appendChild(raw);
          return li;
        }

        function matches(item) {
          const token = filters.token.value.trim().toLowerCase();
          const topic = filters.topic.value.trim();
          const verdict = filters.verdict.value;
          if (token && !(item.token || "").includes(token)) return false;
          if (topic && !(item.topic || "").includes(topic)) return false;
          if (verdict === "accepted" && item.status !== "accepted") return false;
          if (verdict === "rejected" && item.status === "accepted") return false;
          if (filters.fate.value && item.fate !== filters.fate.value) return false;
          return true;
        }

        function redraw() {
          const nodes = items.filter(matches).slice(0, shown).map(render);
          list.replaceChildren(...nodes);
          empty.hidden = nodes.length > 0;
        }

        function add(item) {
          if (item.id <= newest) return;
          newest = item.id;
          items.unshift(item);
          if (items.length > shown) items.length = shown;
          if (matches(item)) {
            const node = render(item);
            node.dataset.live = "1";
            list.insertBefore(node, list.firstChild);
            while (list.childNodes.length > shown) list.removeChild(list.lastChild);
            empty.hidden = true;
          }
        }

        // A notification whose fate changed (stored, then delivered, replaced or expired).
        function update(item) {
          const index = items.findIndex((kept) => kept.id === item.id);
          if (index < 0) return;
          items[index] = item;
          const old = list.querySelector('li[data-id="' + String(Number(item.id)) + '"]');
          if (!old) return;
          const node = render(item);
          if (old.dataset.live) node.dataset.live = old.dataset.live;
          node.dataset.updated = "1";
          if (matches(item)) list.replaceChild(node, old); else list.removeChild(old);
        }

        function listen() {
          const source = new EventSource("/api/v1/stream?after=" + newest);
          source.onopen = () => { state.textContent = "live"; };
          source.onerror = () => { state.textContent = "reconnecting…"; };
          source.onmessage = (event) => { try { add(JSON.parse(event.data)); } catch (error) {} };
          source.addEventListener("update", (event) => { try { update(JSON.parse(event.data)); } catch (error) {} });
        }

        // Called by /initial.js (the newest notifications as JSON, loaded with the page, so the
        // page is complete when it has loaded); then the event stream takes over.
        function inboxStart(data) {
          items = data.notifications;
          newest = items.length ? items[0].id : 0;
          redraw();
          listen();
        }

        for (const input of Object.values(filters)) input.addEventListener("input", redraw);
        document.getElementById("filters").addEventListener("submit", (event) => event.preventDefault());
        document.getElementById("clear").addEventListener("click", async () => {
          await fetch("/api/v1/notifications", { method: "DELETE" });
          items = [];
          redraw();
        });

        """
}
