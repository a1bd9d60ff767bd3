"""The ``gcp`` provider: each instance is a Compute Engine VM created through the
google-cloud-compute client, with Squid installed by the request's cloud-init."""
