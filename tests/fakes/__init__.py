"""Stand-ins for backends that cannot run on this machine; each behaves like the real one."""
