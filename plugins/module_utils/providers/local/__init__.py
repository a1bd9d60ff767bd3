"""The ``local`` provider: each instance is a Squid process on this host, on its own loopback
address. It needs nothing but Squid, so the demo and many tests run a real proxy offline."""
