// swift-tools-version:6.0
import PackageDescription

// The module layering (ARCHITECTURE.md): each target lists exactly what it imports.
//
//   APNsCore          sans-IO: wire codecs, model, JSON, JSON Lines, delivery state machine, errors
//   APNsCredentials   certificates, keys, .p12/.pem/.cer (OpenSSL)
//   APNsRuntime       internal: sockets, poll, threads, locks, clock, TLS sessions, the transport seam,
//                     the HTTP/2 session over nghttp2, the small HTTP/1.1 server, the proxy tunnel
//   APNsMetrics       the metrics listener, the Prometheus registry and its HTTP endpoint
//   APNsInbox         the push inbox: what a simulator or bridge received, its page and JSON API
//   LegacyAPNs        the binary client                 FeedbackClient   the feedback reader/poller
//   HTTP2Client       the HTTP/2 provider-API client    LegacyBridge     binary senders through HTTP/2
//   GatewaySimulator  the simulators (no client module)  LegacyPushCLI    the command line, as a library
//   APNsInput         checked, spooled JSON Lines input (the fast scan, the spool), feedback files, hex text
//   CommandLineKit    the option table, parser, help and console of the command line (not a product)
//   CFileGuard        C: the SIGBUS guard of mapped input (APNsRuntime's GuardedMapping)
//   CHexDecode        C: SSE2 hex decoding of the common 64-digit token (APNsCore's only dependency)
let package = Package(
    name: "LegacyAPNs",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "APNsCore", targets: ["APNsCore"]),
        .library(name: "APNsCredentials", targets: ["APNsCredentials"]),
        .library(name: "LegacyAPNs", targets: ["LegacyAPNs"]),
        .library(name: "APNsMetrics", targets: ["APNsMetrics"]),
        .library(name: "APNsInbox", targets: ["APNsInbox"]),
        .library(name: "FeedbackClient", targets: ["FeedbackClient"]),
        .library(name: "GatewaySimulator", targets: ["GatewaySimulator"]),
        .library(name: "HTTP2Client", targets: ["HTTP2Client"]),
        .library(name: "LegacyBridge", targets: ["LegacyBridge"]),
        .library(name: "APNsInput", targets: ["APNsInput"]),
        .executable(name: "legacy-push", targets: ["legacy-push"]),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CNGHTTP2",
            path: "Sources/CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(name: "CHexDecode", path: "Sources/CHexDecode"),
        .target(name: "APNsCore", dependencies: ["CHexDecode"]),
        .target(name: "CFileGuard", path: "Sources/CFileGuard"),
        .target(
            name: "APNsCredentials",
            dependencies: ["APNsCore", "COpenSSL"]
        ),
        .target(
            name: "APNsRuntime",
            dependencies: ["APNsCore", "APNsCredentials", "COpenSSL", "CNGHTTP2", "CFileGuard"]
        ),
        .target(
            name: "APNsMetrics",
            dependencies: ["APNsCore", "APNsRuntime"]
        ),
        .target(
            name: "APNsInbox",
            dependencies: ["APNsCore", "APNsRuntime"]
        ),
        .target(
            name: "LegacyAPNs",
            dependencies: ["APNsCore", "APNsCredentials", "APNsRuntime"]
        ),
        .target(
            name: "FeedbackClient",
            dependencies: ["APNsCore", "APNsCredentials", "APNsRuntime"]
        ),
        .target(
            name: "HTTP2Client",
            dependencies: ["APNsCore", "APNsCredentials", "APNsRuntime"]
        ),
        .target(
            name: "LegacyBridge",
            dependencies: [
                "APNsCore", "APNsCredentials", "APNsRuntime", "APNsMetrics", "APNsInbox", "HTTP2Client", "CSQLite",
                "CLibPQ",
            ]
        ),
        .target(
            name: "GatewaySimulator",
            dependencies: ["APNsCore", "APNsCredentials", "APNsRuntime", "APNsMetrics", "APNsInbox"]
        ),
        .target(
            name: "APNsInput",
            dependencies: ["APNsCore", "APNsRuntime", "LegacyAPNs"]
        ),
        .target(
            name: "CommandLineKit",
            dependencies: ["APNsCore", "APNsRuntime"]
        ),
        .target(
            name: "LegacyPushCLI",
            dependencies: [
                "APNsCore", "APNsInput", "CommandLineKit", "APNsCredentials", "APNsRuntime", "APNsMetrics",
                "APNsInbox", "LegacyAPNs", "FeedbackClient", "GatewaySimulator", "HTTP2Client", "LegacyBridge",
            ]
        ),
        .executableTarget(
            name: "legacy-push",
            dependencies: ["LegacyPushCLI"],
            // A release binary carries the Swift runtime: no runtime libraries to resolve at every
            // start (BENCHMARKS.md, cli-floor), none to install beside it.
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]
        ),
        .executableTarget(
            name: "LegacyAPNsBenchmarks",
            dependencies: [
                "APNsRuntime", "LegacyAPNs", "FeedbackClient", "GatewaySimulator", "ProcessHarness", "APNsMetrics",
                "APNsInbox",
            ],
            path: "Benchmarks/LegacyAPNsBenchmarks"
        ),
        .executableTarget(
            name: "tls-floor",
            dependencies: ["COpenSSL"],
            path: "Benchmarks/TLSFloor"
        ),
        .executableTarget(
            name: "LegacyAPNsSoak",
            dependencies: [
                "APNsCredentials", "APNsRuntime", "LegacyAPNs", "GatewaySimulator", "HTTP2Client", "LegacyBridge",
                "ProcessHarness",
            ],
            path: "Soak/LegacyAPNsSoak"
        ),
        .target(
            name: "FuzzHarness",
            dependencies: ["APNsCore", "APNsCredentials", "APNsRuntime", "GatewaySimulator"],
            path: "Fuzz/Harness"
        ),
        .executableTarget(
            name: "Notify",
            dependencies: ["LegacyAPNs"],
            path: "Examples/Notify"
        ),
        // Child processes for tests, benchmarks and the soak: a spawner that leaves signals at their
        // defaults, a throwaway PostgreSQL cluster, HAProxy in front of a fleet. No package code.
        .target(
            name: "ProcessHarness",
            path: "Tests/ProcessHarness"
        ),
        .target(
            name: "TestSupport",
            dependencies: ["APNsCore"],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "APNsCoreTests",
            dependencies: ["APNsCore", "TestSupport"]
        ),
        .testTarget(
            name: "LegacyAPNsTests",
            dependencies: [
                "APNsCore", "APNsCredentials", "APNsRuntime", "APNsMetrics", "APNsInbox", "LegacyAPNs",
                "FeedbackClient", "GatewaySimulator", "HTTP2Client", "LegacyBridge", "APNsInput", "CommandLineKit",
                "LegacyPushCLI", "legacy-push",
                "Notify",
                "FuzzHarness",
                "TestSupport", "ProcessHarness",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
