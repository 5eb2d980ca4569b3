// libFuzzer entry point; built by Scripts/fuzz.sh (not part of the Swift package build).
// The target is chosen with LEGACY_FUZZ_TARGET (frame-decoder, feedback-decoder, error-response,
// jsonl, pkcs12, provider-server, provider-response, channel-api).
import FuzzHarness

#if canImport(Glibc)
    import Glibc
#endif

let selectedTarget: @Sendable (UnsafeRawBufferPointer) -> Void = {
    let name = getenv("LEGACY_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTargets.all[name] else {
        fatalError("set LEGACY_FUZZ_TARGET to one of \(FuzzTargets.all.keys.sorted())")
    }
    return target
}()

/// libFuzzer calls this with each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
