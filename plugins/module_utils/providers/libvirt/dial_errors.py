# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""What a failed SSH dial may say: the host, the credential files and the problem's class.

libvirt's SSH clients report a credential problem in their own words, and those words come from
the key parser and the host-key check (libssh2's "Can't retrieve private key passphrase",
libssh's "error while opening private key ..., wrong passphrase?", a host's whole public key on
a mismatch). A parser's text is not ours to vouch for: a malformed key file's content could be
quoted into it. So an SSH-side failure of a dial is reported by class, naming the file to fix,
with libvirt's error number and domain; its text reaches no message, log line or span. Socket
errors (refused, unreachable: libvirt's system errors) keep their text: it is the address's.

The class names keep ``classify`` right: key and host-key problems carry "authentication
failed" or "host key", which it reads as Permanent (an admin must act).
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import backend

_SSH_CODES = frozenset(
    {backend.ERR_SSH, backend.ERR_LIBSSH, backend.ERR_AUTH_FAILED, backend.ERR_AUTH_UNAVAILABLE}
)
_SSH_DOMAINS = frozenset({backend.FROM_SSH, backend.FROM_LIBSSH})
_HOST_KEY_TEXT = ("host key", "known_hosts", "known hosts", "stored identity", "can't verify")
_KEY_TEXT = ("private key", "passphrase", "key file", "privkey", "public key from")
_REFUSED_TEXT = (
    "access denied",
    "combination invalid",
    "permission denied",
    "was not accepted",
    "has failed",
)

KEY_UNUSABLE = "key_unusable"
HOST_KEY_REFUSED = "host_key_refused"
KEY_REFUSED = "key_refused"
SSH_TRANSPORT = "ssh_transport"


def problem_class(code: int, domain: int, text: str) -> str:
    """The class of an SSH-side dial failure, or ``""`` when it is not one (keep its text)."""
    if code not in _SSH_CODES and domain not in _SSH_DOMAINS:
        return ""
    lowered = text.lower()
    if any(marker in lowered for marker in _HOST_KEY_TEXT):
        return HOST_KEY_REFUSED
    if any(marker in lowered for marker in _REFUSED_TEXT):
        return KEY_REFUSED
    if any(marker in lowered for marker in _KEY_TEXT):
        return KEY_UNUSABLE
    return SSH_TRANSPORT


def message(problem: str, host, config) -> str:
    """The message for ``problem`` at ``host``: who, which file, what to fix."""
    who = "%s@%s" % (host.user, host.address)
    key, known = config.ssh_key_file, config.known_hosts_file
    text = {
        KEY_UNUSABLE: "SSH authentication failed for %s: the private key in sshKeyFile %s could not be "
        "used (malformed, of a type libvirt's SSH client cannot read, or protected by a passphrase); "
        "write an unencrypted OpenSSH or PEM private key there" % (who, key),
        KEY_REFUSED: "SSH authentication failed for %s: the key in sshKeyFile %s was not accepted "
        "(authorize its public key for that user)" % (who, key),
        HOST_KEY_REFUSED: "SSH host key of %s could not be verified against knownHostsFile %s "
        "(unknown or changed host key: add the host's key there)" % (who, known or "(none)"),
        SSH_TRANSPORT: "SSH connection to %s failed (sshKeyFile %s)" % (who, key),
    }[problem]
    return text


def translated(exc, host, config) -> backend.LibvirtCallError:
    """``exc`` (libvirt's error for a dial) as the seam's error: by class for an SSH failure,
    with libvirt's own text otherwise. The original is not chained: its text must not travel."""
    code, domain, text = exc.get_error_code() or 0, exc.get_error_domain() or 0, str(exc)
    problem = problem_class(code, domain, text)
    if not problem:
        err = backend.LibvirtCallError(code, text, domain)
        err.__cause__ = exc
        return err
    detail = "%s (libvirt error %d, domain %d; libvirt's text is withheld: it can quote the file)" % (
        message(problem, host, config),
        code,
        domain,
    )
    return backend.LibvirtCallError(code, detail, domain)
