@_exported import APNsCore
@_exported import APNsCredentials
@_exported import HTTP2Client
