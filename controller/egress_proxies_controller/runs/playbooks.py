"""The playbooks the controller runs: one task list each, on localhost, with the run's items
read from the in-memory file the executor hands ``ansible-playbook`` as ``items_file``."""

from __future__ import annotations


def playbook(purpose: str, tasks: str) -> str:
    """A controller playbook: ``tasks`` on localhost, the run's items read from ``items_file``
    (the memfd the executor hands it) as ``batch``."""
    return (
        "- name: egress-proxies controller %s\n"
        "  hosts: localhost\n"
        "  gather_facts: false\n"
        "  vars:\n"
        "    batch: \"{{ lookup('ansible.builtin.file', items_file) | from_json }}\"\n"
        "  tasks:\n" % purpose
    ) + tasks


PLAYBOOK = playbook(
    "batch",
    """\
    - name: instances
      crawl.egress_proxies.proxy_instance:
        instances: "{{ batch.instances }}"
        invalid_items: fail_item
        result_stream: "{{ batch.result_stream | default(omit, true) }}"
        instance_stream: "{{ batch.instance_stream | default(omit, true) }}"
        follow: "{{ batch.follow | default(omit, true) }}"
        concurrency: "{{ batch.concurrency }}"
        timeout: "{{ batch.call_timeout }}"
      when: batch.instances | length > 0
      ignore_errors: true

    - name: gets
      crawl.egress_proxies.proxy_info:
        provider: "{{ item.provider }}"
        ids: "{{ item.ids }}"
        concurrency: "{{ batch.concurrency }}"
        timeout: "{{ batch.call_timeout }}"
      loop: "{{ batch.gets }}"
      ignore_errors: true

    - name: lists
      crawl.egress_proxies.proxy_info:
        provider: "{{ item }}"
        timeout: "{{ batch.call_timeout }}"
      loop: "{{ batch.lists }}"
      ignore_errors: true
""",
)


GC_PLAYBOOK = playbook(
    "orphan collection",
    """\
    - name: gc
      crawl.egress_proxies.proxy_gc:
        live_uids: "{{ batch.live_uids }}"
        min_age: "{{ batch.min_age }}"
        uid_shards: "{{ batch.uid_shards | default(omit) }}"
        timeout: "{{ batch.call_timeout }}"
      check_mode: "{{ batch.dry_run }}"
      ignore_errors: true
""",
)

CHECK_PLAYBOOK = playbook(
    "provider checks",
    """\
    - name: check
      crawl.egress_proxies.proxy_check:
        timeout: "{{ batch.timeout }}"
      ignore_errors: true
""",
)
