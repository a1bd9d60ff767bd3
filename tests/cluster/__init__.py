"""The test control plane (a real kube-apiserver with etcd, controller-manager, scheduler and a
kwok node), its build and launch scripts, pytest fixtures and the tests that use it."""
