# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Whether ``proxy_instance state: absent`` may delete an instance it has read back.

A name or an id can point at anything on a shared backend: a hand-made Pod, another team's VM,
another installation's proxy. Deleting is only safe for what carries our marks, so the module
reads the instance first and refuses (Permanent, saying whose it is) otherwise. ``force``
lets an operator delete an instance of this installation whatever its uid (a Proxy whose UID
changed), never an unmarked one or another installation's.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.excerpt import excerpt


def _other_provider(instance, provider: str) -> str:
    """Why ``instance`` is another configured provider's (two on one project, namespace, host
    or stateDir: issue 28 §2), or ``""``; one made before providers were recorded is anyone's."""
    made_by = getattr(instance, "made_by", "")
    if provider and made_by and made_by != provider:
        return "instance %s belongs to provider %s, not %s (they share a backend)" % (
            instance.name,
            excerpt(made_by),
            provider,
        )
    return ""


def refusal(instance, uid: str, installation: str, force: bool, provider: str = "") -> str:
    """Why ``instance`` must not be deleted by this request, or ``""`` when it may be."""
    if not instance.uid or not instance.installation:
        return (
            "instance %s is not managed by this collection (no uid or installation mark); "
            "refusing to delete it, also with force" % instance.name
        )
    if instance.installation != installation:
        return "instance %s belongs to installation %s, not %s; refusing to delete it" % (
            instance.name,
            excerpt(instance.installation),
            installation,
        )
    other = _other_provider(instance, provider)
    if other:
        return "%s; delete it through that provider" % other
    if uid and instance.uid != uid and not force:
        return "instance %s belongs to uid %s, not %s; set force: true to delete it anyway" % (
            instance.name,
            excerpt(instance.uid),
            excerpt(uid),
        )
    return ""


def adoption_refusal(instance, uid: str, installation: str, provider: str = "") -> str:
    """Why ``state: present`` must not adopt ``instance`` for ``uid``, or ``""``."""
    other = _other_provider(instance, provider)
    if other:
        return other
    if instance.installation and instance.installation != installation:
        return "instance %s belongs to installation %s, not %s" % (
            instance.name,
            excerpt(instance.installation),
            installation,
        )
    if instance.uid != uid:
        return "instance %s belongs to uid %s, not %s" % (instance.name, excerpt(instance.uid), excerpt(uid))
    return ""


def foreign(what: str, managed: bool, marked_installation: str, installation: str) -> str:
    """Why a provider's own ``delete`` must not remove ``what`` (its managed mark and its
    installation mark as read back), or ``""``: the check every provider makes itself, so a
    direct call, GC and a playbook's id are all refused the same way."""
    if not managed:
        return "%s is not managed by this collection (no managed mark); refusing to delete it" % what
    if marked_installation != installation:
        return "%s belongs to installation %s, not %s; refusing to delete it" % (
            what,
            excerpt(marked_installation) if marked_installation else "(none)",
            installation,
        )
    return ""
