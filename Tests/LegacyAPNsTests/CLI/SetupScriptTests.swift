import Foundation
import TestSupport
import Testing

/// `Scripts/setup.sh`, the one list of system packages, and the README's first two commands that
/// call it: a fresh Debian or Ubuntu machine with only Swift gets everything the build and the
/// tests need from them, and nothing the package or its tests use can be missing from the list.
///
/// The install runs are made in a copy of the scripts with fake `dpkg-query`, `apt-get` and
/// `sudo` first on `PATH`, so the tests see what the script would install and run, and install
/// nothing.
@Suite struct SetupScriptTests {
    static let root = FrameFixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
    static let demoCommand = "Scripts/setup.sh && swift run legacy-push demo"
    static let testCommand = "Scripts/setup.sh --tests && swift test"

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appending(path: path), encoding: .utf8)
    }

    /// The contents of the README's fenced code blocks, in order.
    static func codeBlocks(_ markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if let lines = current {
                    blocks.append(lines.joined(separator: "\n"))
                    current = nil
                } else {
                    current = []
                }
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// The `pkgConfig` name and apt packages of every `.systemLibrary` target of Package.swift.
    static func systemLibraries(_ manifest: String) -> [(name: String, pkgConfig: String?, apt: [String])] {
        var libraries: [(String, String?, [String])] = []
        var rest = manifest[...]
        while let start = rest.range(of: ".systemLibrary(") {
            // The target's argument list: up to the parenthesis that closes it.
            var depth = 1
            var end = start.upperBound
            while end < rest.endIndex, depth > 0 {
                if rest[end] == "(" { depth += 1 }
                if rest[end] == ")" { depth -= 1 }
                end = rest.index(after: end)
            }
            let arguments = String(rest[start.upperBound..<end])
            rest = rest[end...]
            /// The quoted strings after `label`, up to the first `]` (one of them, `single`).
            func quoted(after label: String, in text: String, single: Bool = false) -> [String] {
                guard let range = text.range(of: label) else { return [] }
                var values: [String] = []
                var value: String?
                for character in text[range.upperBound...] {
                    if character == "\"" {
                        if let done = value {
                            values.append(done)
                            value = nil
                            if single { break }
                        } else {
                            value = ""
                        }
                    } else if value != nil {
                        value?.append(character)
                    } else if character == "]" {
                        break
                    }
                }
                return values
            }
            libraries.append(
                (
                    quoted(after: "name: ", in: arguments, single: true).first ?? "?",
                    quoted(after: "pkgConfig: ", in: arguments, single: true).first,
                    quoted(after: ".apt([", in: arguments)
                ))
        }
        return libraries
    }

    /// `Scripts/setup.sh --list` (with `--tests` when asked): the packages, by name.
    static func listed(tests: Bool) throws -> Set<String> {
        let result = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/bin/bash"),
            [root.appending(path: "Scripts/setup.sh").path, "--list"] + (tests ? ["--tests"] : []))
        #expect(result.status == 0, "\(result.stderr)")
        return Set(result.outputLines.compactMap { $0.split(separator: "\t").first.map(String.init) })
    }

    @Test func theReadmeBeginsWithTheTwoCommandsThatSetUpAFreshMachine() throws {
        let readme = try Self.text("README.md")
        let blocks = Self.codeBlocks(readme)
        #expect(Array(blocks.prefix(2)) == [Self.demoCommand, Self.testCommand])
        // .ci/run runs the README's test command exactly as written there, and checks it is there.
        let ci = try Self.text(".ci/run")
        #expect(ci.contains("test_command='\(Self.testCommand)'"))
        #expect(ci.contains("bash -c \"$test_command\""))
        #expect(ci.contains("grep -qxF \"$test_command\" README.md"))
        // One list: .ci/run installs nothing itself.
        #expect(!ci.contains("apt-get"))
    }

    @Test func theListCoversEverySystemLibraryTargetOfThePackage() throws {
        let libraries = Self.systemLibraries(try Self.text("Package.swift"))
        #expect(libraries.map(\.name) == ["COpenSSL", "CNGHTTP2", "CSQLite", "CLibPQ"])
        let build = try Self.listed(tests: false)
        for library in libraries {
            #expect(!library.apt.isEmpty, "\(library.name) names no apt provider in Package.swift")
            for package in library.apt {
                #expect(build.contains(package), "\(library.name) needs \(package): add it to Scripts/setup.sh")
            }
            if library.pkgConfig != nil {
                #expect(build.contains("pkg-config"), "\(library.name) is found with pkg-config")
            }
        }
    }

    @Test func theTestListCoversEveryProgramTheTestsRun() throws {
        let tests = try Self.listed(tests: true)
        #expect(tests.isSuperset(of: try Self.listed(tests: false)))
        for program in ExternalProgram.allCases {
            #expect(tests.contains(program.package), "\(program.name) comes from \(program.package)")
        }
        // openssl (OpenSSLTool), git (ReadmeTests), python3 and its venv module (PythonTools).
        for package in ["openssl", "git", "python3", "python3-venv"] {
            #expect(tests.contains(package), "\(package) is missing from Scripts/setup.sh --tests")
        }
        let setup = try Self.text("Scripts/setup.sh")
        #expect(setup.contains("Scripts/test-tools.sh"), "--tests installs the Python judges too")
    }

    /// A copy of the two scripts in a scratch checkout, and fake package tools first on PATH:
    /// `dpkg-query` says installed exactly the packages given, `apt-get` and `sudo` only log.
    struct FakeMachine {
        let scratch: ScratchDirectory
        let installed: [String]

        init(installed: [String]) throws {
            scratch = try ScratchDirectory()
            self.installed = installed
            try FileManager.default.createDirectory(atPath: scratch.file("Scripts"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: scratch.file("bin"), withIntermediateDirectories: true)
            for script in ["setup.sh", "test-tools.sh"] {
                try FileManager.default.copyItem(
                    atPath: SetupScriptTests.root.appending(path: "Scripts/" + script).path,
                    toPath: scratch.file("Scripts/" + script))
            }
            let tools = [
                // dpkg-query -W -f FORMAT PACKAGE...
                "dpkg-query": """
                #!/bin/sh
                shift 3
                for p in "$@"; do case " $FAKE_INSTALLED " in *" $p "*) echo "$p installed" ;; esac; done
                """,
                "apt-get": "#!/bin/sh\necho \"apt-get $*\" >>\"$FAKE_LOG\"\n",
                "sudo": "#!/bin/sh\necho sudo >>\"$FAKE_LOG\"\nexec \"$@\"\n",
            ]
            for (name, body) in tools {
                let path = try scratch.write(Array((body + "\n").utf8), named: "bin/" + name)
                chmod(path, 0o755)
            }
        }

        func run(_ arguments: [String]) throws -> (status: Int32, stdout: [String], stderr: String, apt: [String]) {
            let path = scratch.file("bin") + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            let result = try CLIRunner.runProcess(
                URL(fileURLWithPath: "/bin/bash"), [scratch.file("Scripts/setup.sh")] + arguments,
                environment: [
                    "PATH": path, "FAKE_INSTALLED": installed.joined(separator: " "),
                    "FAKE_LOG": scratch.file("apt.log"),
                ])
            let log = scratch.read("apt.log").map { String(decoding: $0, as: UTF8.self) } ?? ""
            return (
                result.status, result.outputLines, result.stderr,
                log.split(separator: "\n").map(String.init).filter { $0 != "sudo" }
            )
        }
    }

    @Test func aDryRunOnABareMachineSaysWhatItWouldInstallAndWhyAndInstallsNothing() throws {
        let everything = try Self.listed(tests: true)
        let machine = try FakeMachine(installed: [])
        let run = try machine.run(["--tests", "--dry-run"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.apt.isEmpty)
        let named = run.stdout.compactMap { line -> String? in
            guard line.hasPrefix("setup: would install "), let colon = line.firstIndex(of: ":") else { return nil }
            let rest = line[line.index(colon, offsetBy: 2)...].dropFirst("would install ".count)
            guard let end = rest.firstIndex(of: ":"), rest[rest.index(after: end)...].count > 10 else { return nil }
            return String(rest[..<end])
        }
        #expect(Set(named) == everything, "\(run.stdout)")
        #expect(
            run.stdout.last?.hasPrefix("setup: would install the Python judges from PyPI into .build/test-tools/venv")
                == true)
        #expect(!FileManager.default.fileExists(atPath: machine.scratch.file(".build/test-tools")))
    }

    @Test func itInstallsOnlyWhatIsMissingThroughAptAndSaysSoFirst() throws {
        let build = try Self.listed(tests: false)
        let machine = try FakeMachine(installed: Array(build.subtracting(["libnghttp2-dev"])))
        let run = try machine.run([])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stdout.first?.hasPrefix("setup: installing libnghttp2-dev: nghttp2 headers") == true, "\(run.stdout)")
        #expect(run.apt == ["apt-get update", "apt-get install -y --no-install-recommends libnghttp2-dev"])
    }

    @Test func withEverythingThereItDoesNothingAndSaysNothing() throws {
        let machine = try FakeMachine(installed: Array(try Self.listed(tests: true)))
        let run = try machine.run([])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.isEmpty && run.stderr.isEmpty)
        #expect(run.apt.isEmpty)
        let dry = try machine.run(["--dry-run"])
        #expect(dry.stdout == ["setup: nothing to install"])
        #expect(dry.apt.isEmpty)
    }

    @Test func anUnknownOptionIsAUsageError() throws {
        let run = try FakeMachine(installed: []).run(["--test"])
        #expect(run.status == 2)
        #expect(run.stderr == "usage: Scripts/setup.sh [--tests] [--dry-run] [--list]\n")
        #expect(run.apt.isEmpty)
    }
}
