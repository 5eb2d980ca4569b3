@_exported import APNsCore
@_exported import APNsCredentials
@_exported import APNsInbox

// Re-exported so that `import GatewaySimulator` is enough to use the notification, wire and credential
// types in this module's API (as NIO modules re-export NIOCore), and the inbox it shows them in.
