@_exported import APNsCore

// Re-exported so that `import APNsInput` is enough to use the notification and wire types of this
// module's API. `FrameBatch` (what ``JSONLinesInput/frameBatches()`` yields) is LegacyAPNs's.
