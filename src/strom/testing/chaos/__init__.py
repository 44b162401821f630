"""Jepsen-style chaos for strom clusters: nemeses that inject faults, workloads that record a
history of what clients did and saw, and a checker that names the anomalies in it."""
