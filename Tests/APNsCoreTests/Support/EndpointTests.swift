import APNsCore
import Testing

/// `Endpoint(parsing:)`: HOST:PORT, IPv6 in brackets, and a reason naming the mistake otherwise.
@Suite struct EndpointTests {
    @Test(arguments: [
        ("127.0.0.1:2195", "127.0.0.1", 2195),
        ("[::1]:443", "::1", 443),
        ("api.push.apple.com:443", "api.push.apple.com", 443),
    ])
    func hostAndPortParse(_ text: String, _ host: String, _ port: Int) throws {
        let endpoint = try Endpoint(parsing: text)
        #expect(endpoint == Endpoint(host: host, port: UInt16(port)))
        #expect(endpoint.description == text)
    }

    @Test(arguments: [
        ("https://host:443", "--x takes HOST:PORT, not a URL: drop 'https://'"),
        ("host:70000", "--x: port 70000 is over 65535"),
        ("host:0", "--x: port 0 is not a port (1 to 65535)"),
        ("host", "--x needs a port: HOST:PORT, e.g. host:2195"),
        (":2195", "--x needs a host: HOST:PORT, e.g. 127.0.0.1:2195"),
        ("[::1]", "--x needs a port: HOST:PORT, e.g. [::1]:2195"),
        ("[::1:2195", "--x: '[::1:2195' has no ']' closing its IPv6 address"),
    ])
    func mistakesAreNamed(_ text: String, _ reason: String) {
        #expect(throws: LegacyAPNsError(.invalidValue, reason)) {
            try Endpoint(parsing: text, naming: "--x", examplePort: 2195)
        }
    }
}
