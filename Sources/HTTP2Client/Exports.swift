@_exported import APNsCore
@_exported import APNsCredentials

// Re-exported so that `import HTTP2Client` is enough to build requests, load credentials and read
// reports (as NIO modules re-export NIOCore).
