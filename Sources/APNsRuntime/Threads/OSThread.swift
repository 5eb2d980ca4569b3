import APNsCore
import APNsCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// Starts a detached OS thread. Connection loops block in `poll(2)` and OpenSSL, which must not
/// happen on Swift's cooperative thread pool, so each connection owner gets a thread of its own.
package enum OSThread {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    package static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        var thread = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let result = pthread_create(
            &thread, &attributes,
            { raw in
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        pthread_attr_destroy(&attributes)
        if result != 0 {
            Unmanaged<Box>.fromOpaque(box).release()
            fatalError("cannot start thread \(name): \(errnoText(result))")
        }
    }
}
