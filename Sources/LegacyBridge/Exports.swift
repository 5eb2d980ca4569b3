@_exported import APNsCore
@_exported import APNsCredentials
@_exported import APNsInbox
@_exported import HTTP2Client
