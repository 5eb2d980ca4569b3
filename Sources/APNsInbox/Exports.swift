@_exported import APNsCore

// Re-exported so that `import APNsInbox` is enough to name the tokens, frames and requests an
// inbox notification carries.
