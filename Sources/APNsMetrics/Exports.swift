@_exported import APNsCore

// Re-exported so that `import APNsMetrics` is enough to name the statuses, reasons and push types
// the listener callbacks carry.
