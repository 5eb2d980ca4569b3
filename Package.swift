// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LegacyAPNs",
    products: [
        .library(name: "LegacyAPNs", targets: ["LegacyAPNs"]),
        .library(name: "FeedbackClient", targets: ["FeedbackClient"]),
        .library(name: "GatewaySimulator", targets: ["GatewaySimulator"]),
        .executable(name: "legacy-push", targets: ["legacy-push"]),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "LegacyAPNs",
            dependencies: ["COpenSSL"],
            linkerSettings: [.linkedLibrary("m")]
        ),
        .target(
            name: "FeedbackClient",
            dependencies: ["LegacyAPNs", "COpenSSL"]
        ),
        .target(
            name: "GatewaySimulator",
            dependencies: ["LegacyAPNs", "FeedbackClient", "COpenSSL"]
        ),
        .executableTarget(
            name: "legacy-push",
            dependencies: ["LegacyAPNs", "FeedbackClient", "GatewaySimulator"]
        ),
        .executableTarget(
            name: "LegacyAPNsBenchmarks",
            dependencies: ["LegacyAPNs", "FeedbackClient", "GatewaySimulator"],
            path: "Benchmarks/LegacyAPNsBenchmarks"
        ),
        .executableTarget(
            name: "LegacyAPNsSoak",
            dependencies: ["LegacyAPNs", "FeedbackClient", "GatewaySimulator"],
            path: "Soak/LegacyAPNsSoak"
        ),
        .target(
            name: "FuzzHarness",
            dependencies: ["LegacyAPNs", "FeedbackClient"],
            path: "Fuzz/Harness"
        ),
        .executableTarget(
            name: "Notify",
            dependencies: ["LegacyAPNs"],
            path: "Examples/Notify"
        ),
        .testTarget(
            name: "LegacyAPNsTests",
            dependencies: ["LegacyAPNs", "FeedbackClient", "GatewaySimulator", "legacy-push", "Notify", "FuzzHarness"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
