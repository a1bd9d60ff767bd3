"""What the controller tells its operators: Prometheus metrics and their server, authenticated
metrics, OpenTelemetry tracing, and the figures computed for them (poll gaps, runner phases)."""
