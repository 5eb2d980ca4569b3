import Foundation
import TestSupport

/// PyJWT as an independent judge of provider tokens: one Python process checks or makes a batch.
enum PyJWTJudge {
    /// What PyJWT said about one token.
    struct Verdict {
        var accepted: Bool
        /// The exception class when refused ("InvalidSignatureError").
        var error: String?
        var header: [String: Any]
        var claims: [String: Any]
    }

    private static let program = #"""
        import json, sys, jwt
        results = []
        for request in json.load(sys.stdin):
            try:
                if request["op"] == "decode":
                    key = open(request["key"]).read()
                    token = request["token"]
                    claims = jwt.decode(token, key, algorithms=["ES256"], options={"require": ["iss", "iat"]})
                    results.append({"ok": True, "header": jwt.get_unverified_header(token), "claims": claims})
                else:
                    key = open(request["key"]).read() if "key" in request else request.get("secret")
                    token = jwt.encode(request["claims"], key, algorithm=request["alg"], headers=request.get("headers"))
                    results.append({"ok": True, "token": token})
            except Exception as error:
                results.append({"ok": False, "error": type(error).__name__, "message": str(error)})
        json.dump(results, sys.stdout)
        """#

    /// Runs a batch of requests; one result object per request.
    static func run(_ requests: [[String: Any]]) throws -> [[String: Any]] {
        let input = try JSONSerialization.data(withJSONObject: requests)
        let result = try PythonTools.run(program, stdin: Array(input))
        guard result.status == 0,
            let output = try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [[String: Any]],
            output.count == requests.count
        else {
            throw PythonTools.InstallationFailed(
                description: "PyJWT judge failed (status \(result.status)): \(result.stderr) \(result.output)")
        }
        return output
    }

    /// `jwt.decode(token, <PEM at keyPath>, algorithms=["ES256"])` for each token.
    static func decode(_ tokens: [String], keyPath: String) throws -> [Verdict] {
        try run(tokens.map { ["op": "decode", "token": $0, "key": keyPath] }).map { result in
            Verdict(
                accepted: result["ok"] as? Bool == true, error: result["error"] as? String,
                header: result["header"] as? [String: Any] ?? [:], claims: result["claims"] as? [String: Any] ?? [:])
        }
    }

    /// `jwt.encode(claims, key, algorithm=..., headers=...)` for each request; the tokens.
    static func encode(_ requests: [[String: Any]]) throws -> [String] {
        try run(requests.map { $0.merging(["op": "encode"]) { $1 } }).map { result in
            guard let token = result["token"] as? String else {
                throw PythonTools.InstallationFailed(description: "PyJWT could not encode: \(result)")
            }
            return token
        }
    }
}
