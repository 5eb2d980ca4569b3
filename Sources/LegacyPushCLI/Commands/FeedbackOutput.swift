internal import APNsRuntime
import CommandLineKit
import FeedbackClient
import LegacyAPNs

/// Prints feedback tuples for `legacy-push feedback` so that none is ever lost (issue #13): the
/// service forgets what it sent, so a tuple that could not be printed must end up in a file.
///
/// Tuples are printed through the console and checked in batches: every ``checkpointInterval``
/// tuples (and at the end) stdout is flushed, and if a write failed, every tuple since the last
/// good flush counts as possibly unprinted, and so does every later one (nothing more is
/// printed). Those that `--save` does not already hold are appended to a file of their own,
/// `feedback-unprinted-<time>.bin` (raw tuples, mode 0600, as `--save` writes them) in the
/// current directory, else in `$TMPDIR`; if even that fails, they go to stderr as text lines.
final class FeedbackOutput {
    /// Tuples printed between two checks of stdout.
    static let checkpointInterval = 1024

    let console: Console
    let save: SaveFile?
    let format: (FeedbackRecord) -> String
    /// When the run started, for the fallback file's name.
    let startTime: Int64

    /// Tuples handed to ``print(_:)`` so far (the next one's index).
    private(set) var count = 0
    /// Index of the first tuple not yet confirmed written to stdout.
    private var pendingStart = 0
    private var pending: [FeedbackRecord] = []
    /// Why stdout failed, once it has.
    private(set) var stdoutFailure: String?
    /// Tuples that may not have been printed.
    private(set) var unprintedCount = 0
    /// Of those, the ones `--save` does not hold, and where they went.
    private var fallback: SaveFile?
    private var fallbackTried = false
    private var onStderr = 0

    init(console: Console, save: SaveFile?, format: @escaping (FeedbackRecord) -> String, now: Int64) {
        self.console = console
        self.save = save
        self.format = format
        self.startTime = now
    }

    /// Prints one tuple (or, once stdout has failed, keeps it for the file of unprinted tuples).
    func print(_ record: FeedbackRecord) {
        count += 1
        guard stdoutFailure == nil else {
            keep([record], from: count - 1)
            return
        }
        console.print(format(record))
        pending.append(record)
        if pending.count >= Self.checkpointInterval { checkpoint() }
    }

    /// Flushes stdout and checks it; returns false once stdout has failed.
    @discardableResult
    func checkpoint() -> Bool {
        guard stdoutFailure == nil else { return false }
        if let failure = console.outputFailure {
            stdoutFailure = failure
            keep(pending, from: pendingStart)
            pending = []
            return false
        }
        pending.removeAll(keepingCapacity: true)
        pendingStart = count
        return true
    }

    /// The tuples from index `first` on may not have been printed: put those `--save` lacks in the
    /// fallback file.
    private func keep(_ records: [FeedbackRecord], from first: Int) {
        guard !records.isEmpty else { return }
        unprintedCount += records.count
        let saved = save.map { save in save.failure == nil ? Int.max : save.savedTupleCount } ?? 0
        let unsaved = records.enumerated().filter { first + $0.offset >= saved }.map(\.element)
        guard !unsaved.isEmpty else { return }
        if fallback == nil, !fallbackTried {
            fallbackTried = true
            fallback = openFallback()
        }
        if let fallback, fallback.failure == nil {
            let before = fallback.savedTupleCount
            if (try? fallback.append(unsaved)) != nil { return }
            // The fallback filled up too: what did not fit goes to stderr.
            writeToStderr(Array(unsaved.dropFirst(fallback.savedTupleCount - before)))
            return
        }
        writeToStderr(unsaved)
    }

    private func writeToStderr(_ records: [FeedbackRecord]) {
        for record in records {
            console.diagnostic("legacy-push: unsaved tuple: \(record.textLine)")
        }
        onStderr += records.count
    }

    /// `feedback-unprinted-20260131T120000Z.bin` in the current directory, else in `$TMPDIR`.
    private func openFallback() -> SaveFile? {
        let stamp = UTCTime.iso8601(startTime).filter { $0 != "-" && $0 != ":" }
        for directory in ["", Files.temporaryDirectory + "/"] {
            for suffix in ["", "-2", "-3", "-4", "-5"] {
                let path = "\(directory)feedback-unprinted-\(stamp)\(suffix).bin"
                if let file = try? SaveFile(path: path, exclusive: true, option: "the unprinted tuples") {
                    return file
                }
                if !FileSystem.exists(path) { break }  // not taken: the folder is unwritable
            }
        }
        return nil
    }

    /// The last check, and the one line that says what became of the tuples that were not
    /// printed; nil when stdout never failed.
    func finish() -> String? {
        checkpoint()
        guard let stdoutFailure else { return nil }
        console.outputFailureReported = true
        let tuples = "\(unprintedCount) tuple\(unprintedCount == 1 ? "" : "s")"
        var parts: [String] = []
        let inFallback = fallback?.savedTupleCount ?? 0
        let inSave = unprintedCount - inFallback - onStderr
        if let save, inSave > 0 {
            parts.append(
                inFallback + onStderr == 0
                    ? "they are all in '\(save.path)' (--save)" : "\(inSave) of them are in '\(save.path)' (--save)")
        }
        if let fallback, inFallback > 0 {
            parts.append(
                "\(inSave > 0 ? "the other \(inFallback)" : "they") are saved in '\(fallback.path)' (raw tuples, as "
                    + "--save writes them; serve --feedback-file reads them)")
        }
        if onStderr > 0 { parts.append("\(onStderr) could not be saved anywhere and are on stderr above") }
        if unprintedCount == 0 { parts.append("no tuple was lost") }
        return "cannot write the results to stdout (\(stdoutFailure)): \(tuples) may not have been printed; "
            + parts.joined(separator: "; ")
    }
}
