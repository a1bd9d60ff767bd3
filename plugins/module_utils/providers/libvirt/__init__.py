"""The libvirt provider, registered as the types ``kvm`` and ``kvm2``: each instance is a libvirt
domain (plus its overlay, seed and marks volumes) on one of the configured hypervisors, reached
with libvirt-python over SSH. See docs/libvirt-provider.md."""
