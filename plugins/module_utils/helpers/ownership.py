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

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt


def other_provider(what: str, made_by: str, provider: str) -> str:
    """Why ``what``, marked as made by ``made_by``, is another configured provider's (two on one
    project, namespace, host or stateDir: issue 28 §2), or ``""``; one made before providers
    were recorded (no mark) is anyone's. The modules ask it of what ``get`` read back, and each
    provider of what its own ``create`` and ``delete`` read."""
    if provider and made_by and made_by != provider:
        return "%s belongs to provider %s, not %s (they share a backend)" % (what, excerpt(made_by), provider)
    return ""


def _other_provider(instance, provider: str) -> str:
    return other_provider("instance %s" % instance.name, getattr(instance, "made_by", ""), provider)


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


def foreign(
    what: str,
    managed: bool,
    marked_installation: str,
    installation: str,
    made_by: str = "",
    provider: str = "",
) -> str:
    """Why a provider's own ``delete`` must not remove ``what`` (its managed mark, installation
    mark and provider mark ``made_by`` as read back; ``provider`` the deleting provider's
    name), or ``""``: the check every provider makes itself, so a direct call, GC and a
    playbook's id are all refused the same way."""
    if not managed:
        return "%s is not managed by this collection (no managed mark); refusing to delete it" % what
    if marked_installation != installation:
        return "%s belongs to installation %s, not %s; refusing to delete it" % (
            what,
            excerpt(marked_installation) if marked_installation else "(none)",
            installation,
        )
    other = other_provider(what, made_by, provider)
    if other:
        return "%s; delete it through that provider" % other
    return ""
