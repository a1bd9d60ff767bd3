"""One ansible-runner run of the collection's modules: the payload and its answers (executor.py),
how ansible-playbook is started (fork server), and how every process of a run is found and killed."""
