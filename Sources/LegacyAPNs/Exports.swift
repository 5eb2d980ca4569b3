@_exported import APNsCore
@_exported import APNsCredentials

// Re-exported so that `import LegacyAPNs` is enough to use the notification, wire and credential
// types in this module's API (as NIO modules re-export NIOCore).
