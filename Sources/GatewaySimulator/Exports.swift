@_exported import LegacyAPNs
