"""spec.auth.secretRef in the controller: the Secret's credentials checked by the module's own rule
(proxy_auth's username_fault and password_fault: bad content is a retried condition, never a
PermanentError latch), messages that name the Secret but never a value, the spec hash unchanged
for Proxies without auth, and the reconciler's plan and answers for a Proxy with auth (table
tests)."""

from __future__ import annotations

import pytest
from egress_proxies_controller import api
from egress_proxies_controller.proxy import auth_secret
from egress_proxies_controller.proxy.reconciler import CREATE, GET, PHASE_POLL, Answer, Reconciler
from egress_proxies_controller.proxy.spec import ProxySpec

from .test_reconciler import NOW, SETTINGS, cond, instance, proxy, running_status

SENTINEL = "Sentinel-Controller-Pw"
CASES = [  # (username, password, refused): the module's proxy_auth rule, worded for a Secret
    ("crawler", SENTINEL, False),
    ("", SENTINEL, True),
    ("a:b", SENTINEL, True),
    ("two words", SENTINEL, True),
    ("tab\tname", SENTINEL, True),
    ("u" * 64, SENTINEL, False),
    ("u" * 65, SENTINEL, True),
    ("#crawler", SENTINEL, True),  # the password file's reader takes the line for a comment
    ("jürgen", SENTINEL, True),  # a Basic header names no charset
    ("crawler", "", True),
    ("crawler", SENTINEL + "\n", True),
    ("crawler", SENTINEL + "\x00", True),
    ("crawler", "p" * 256, False),
    ("crawler", "p" * 257, True),
    ("crawler", "spaces are fine ü", False),
]


@pytest.mark.parametrize(("username", "password", "refused"), CASES)
def test_credentials_the_module_refuses_are_a_problem_that_quotes_no_value(username, password, refused):
    said = auth_secret.problem(username, password)
    assert bool(said) is refused, said
    assert said == "" or said.startswith(("key username ", "key password "))
    assert SENTINEL not in said and (len(username) < 2 or username not in said)


class _Kube:
    def __init__(self, answer):
        self.answer = answer

    def secret_values(self, namespace, name, keys, what):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (LookupError("auth Secret ns/creds: Not Found"), "auth Secret ns/creds: Not Found"),
        (TimeoutError("read timed out"), "auth Secret ns/creds: TimeoutError"),
        ({"username": "a:b", "password": SENTINEL}, "auth Secret ns/creds: key username contains ':'"),
        ({"username": "a", "password": SENTINEL + "\n"}, "key password contains control characters"),
    ],
)
def test_unavailable_credentials_name_the_secret_never_a_value(answer, fragment):
    with pytest.raises(auth_secret.Unavailable) as caught:
        auth_secret.credentials(_Kube(answer), "ns", "creds")
    assert fragment in str(caught.value)
    assert SENTINEL not in str(caught.value)
    assert caught.value.reason == api.REASON_SECRET_UNAVAILABLE


@pytest.mark.parametrize(
    "missing",
    [
        LookupError("auth Secret ns/creds: Not Found"),
        LookupError("auth Secret ns/creds has no key 'password'"),
    ],
)
def test_a_missing_secret_or_key_names_the_keys_the_secret_needs(missing):
    """Issue 37: the message named the Secret but not the keys a user has to put in it."""
    with pytest.raises(auth_secret.Unavailable) as caught:
        auth_secret.credentials(_Kube(missing), "ns", "creds")
    assert str(caught.value) == str(missing) + (
        "; it needs the keys username and password"
        " (kubectl create secret generic creds -n ns --from-literal=username=... --from-literal=password=...)"
    )


def test_good_credentials_are_returned():
    got = auth_secret.credentials(_Kube({"username": "crawler", "password": SENTINEL}), "ns", "creds")
    assert got == {"username": "crawler", "password": SENTINEL}


def test_spec_hash_of_a_proxy_without_auth_is_what_it_was_before_auth():
    """Computed on main before auth existed: an upgrade must replace no instance."""
    assert ProxySpec.from_object({"spec": {"provider": "local", "port": 3128}}).hash() == "2a68dea605dc1d08"
    cloud = {
        "provider": "gcp",
        "placement": {"zone": "z"},
        "cloudInit": {"secretRef": {"name": "s", "key": "k"}},
        "port": 8080,
    }
    assert ProxySpec.from_object({"spec": cloud}).hash() == "8576fd993976ca51"
    with_auth = ProxySpec.from_object(
        {"spec": {"provider": "local", "auth": {"secretRef": {"name": "creds"}}}}
    )
    assert with_auth.auth_secret == "creds" and with_auth.hash() != "2a68dea605dc1d08"


# -- the reconciler ---------------------------------------------------------------------------


def _r() -> Reconciler:
    return Reconciler(SETTINGS, ["local"], now=lambda: NOW)


def _authed(**status):
    base = proxy(spec__auth={"secretRef": {"name": "creds"}})
    return proxy(spec__auth={"secretRef": {"name": "creds"}}, status=dict(running_status(base), **status))


def test_a_proxy_with_auth_is_polled_with_a_present_so_a_rotated_secret_is_applied():
    assert _r().plan(_authed()).action.op == CREATE
    assert _r().plan(_authed()).action.phase == PHASE_POLL
    plain = proxy(status=running_status(proxy()))
    assert _r().plan(plain).action.op == GET


def test_applied_credentials_are_a_condition_and_a_rotation_an_event():
    r, p = _r(), _authed()
    action = r.plan(p).action
    unchanged = r.apply(
        p, action, Answer(ok=True, instance=dict(instance("Running", "127.77.0.1"), changed=False))
    )
    assert cond(unchanged.status, api.COND_CREDENTIALS)["status"] == "True"
    assert [e for e in unchanged.events if e[1] == "CredentialsRotated"] == []
    rotated = r.apply(
        p, action, Answer(ok=True, instance=dict(instance("Running", "127.77.0.1"), changed=True))
    )
    assert [e[1] for e in rotated.events if e[1] == "CredentialsRotated"] == ["CredentialsRotated"]
    assert cond(rotated.status, api.COND_READY)["status"] == "True"


def test_the_rotation_event_says_how_long_the_old_password_may_still_open_connections():
    """Issue 40 §6: "updated in place" alone hid Squid's credentials cache (60 s on main)."""
    r, p = _r(), _authed()
    rotated = r.apply(
        p, r.plan(p).action, Answer(ok=True, instance=dict(instance("Running", "127.77.0.1"), changed=True))
    )
    [message] = [e[2] for e in rotated.events if e[1] == "CredentialsRotated"]
    assert "the old password opens new connections for at most 1 s" in message, message


def test_missing_secret_on_create_is_a_retried_condition_never_a_latch():
    r = _r()
    p = proxy(spec__auth={"secretRef": {"name": "creds"}})
    action = r.plan(p).action
    assert action.op == CREATE
    answer = Answer(
        ok=False,
        error_class="transient",
        message="auth Secret ns/creds: Not Found",
        reason=api.REASON_SECRET_UNAVAILABLE,
    )
    step = r.apply(p, action, answer)
    assert step.backoff
    assert cond(step.status, api.COND_CREDENTIALS)["reason"] == api.REASON_SECRET_UNAVAILABLE
    assert cond(step.status, api.COND_READY)["reason"] == api.REASON_SECRET_UNAVAILABLE
    assert not [
        c for c in step.status["conditions"] if c["type"] == api.COND_PERMANENT and c["status"] == "True"
    ]
    assert step.events == [("Warning", api.REASON_SECRET_UNAVAILABLE, "auth Secret ns/creds: Not Found")]
    again = r.apply(proxy(spec__auth={"secretRef": {"name": "creds"}}, status=step.status), action, answer)
    assert again.events == []  # one Event per transition, not per retry
    later = proxy(spec__auth={"secretRef": {"name": "creds"}}, status=step.status)
    assert r.plan(later).action.op == CREATE  # still planned: the Secret may appear


def test_missing_secret_on_poll_keeps_ready():
    r, p = _r(), _authed(conditions=[{"type": api.COND_READY, "status": "True", "reason": "Running"}])
    answer = Answer(
        ok=False,
        error_class="transient",
        message="auth Secret ns/creds: Forbidden",
        reason="SecretUnavailable",
    )
    step = r.apply(p, r.plan(p).action, answer)
    assert cond(step.status, api.COND_READY)["status"] == "True"
    assert cond(step.status, api.COND_CREDENTIALS)["status"] == "False"


def test_credentials_fixed_at_creation_replace_the_instance_instead_of_latching():
    """A rotated Secret on a provider that fixes credentials at creation (gcp, kvm): the poll's
    Permanent CredentialsFixedAtCreation marks a replacement in status; the next plans delete the
    old instance on the provider that made it, and create only once it is gone."""
    r, p = _r(), _authed(conditions=[{"type": api.COND_READY, "status": "True", "reason": "Running"}])
    action = r.plan(p).action
    answer = Answer(
        ok=False,
        error_class="permanent",
        message="local sync_auth local/x: permanent: the VM was created with other credentials",
        reason=api.REASON_CREDENTIALS_FIXED,
    )
    step = r.apply(p, action, answer)
    assert not [
        c for c in step.status["conditions"] if c["type"] == api.COND_PERMANENT and c["status"] == "True"
    ]
    assert cond(step.status, api.COND_READY)["reason"] == "Replacing"
    assert cond(step.status, api.COND_CREDENTIALS)["reason"] == api.REASON_CREDENTIALS_CHANGED
    assert [e[1] for e in step.events] == [api.REASON_CREDENTIALS_CHANGED]
    assert "creds" in step.events[0][2] and step.requeue_after == SETTINGS.requeue_now
    marked = proxy(spec__auth={"secretRef": {"name": "creds"}}, status=step.status)
    delete = r.plan(marked).action
    assert (delete.op, delete.phase, delete.provider_id) == ("delete", "replace", step.status["providerID"])
    deleting = r.apply(marked, delete, Answer(ok=True, instance=dict(instance("Running", "127.77.0.1"))))
    assert (
        deleting.status["providerID"]
        and "credentials changed" in cond(deleting.status, api.COND_READY)["message"]
    )
    assert deleting.events == []  # Ready already says Replacing: one Event for the transition
    gone = r.apply(marked, delete, Answer(ok=False, error_class="not_found", message="gone"))
    fresh = proxy(spec__auth={"secretRef": {"name": "creds"}}, status=gone.status)
    create = r.plan(fresh).action
    assert (create.op, create.phase) == (CREATE, "create")
    made = r.apply(fresh, create, Answer(ok=True, instance=dict(instance("Running", "127.77.0.1"))))
    assert made.status["specHash"] == fresh.spec.hash()  # the replacement is over
    assert (
        r.plan(proxy(spec__auth={"secretRef": {"name": "creds"}}, status=made.status)).action.phase
        == PHASE_POLL
    )
    other = r.apply(p, action, Answer(ok=False, error_class="permanent", message="something else"))
    assert cond(other.status, api.COND_PERMANENT)["status"] == "True"  # any other Permanent still latches


def test_a_create_that_finds_the_instance_with_other_credentials_records_and_replaces_it():
    """A create found this Proxy's instance (made before a crash) with other credentials: its id
    is recorded and it is replaced, never latched and never left behind."""
    r = _r()
    p = proxy(spec__auth={"secretRef": {"name": "creds"}})
    action = r.plan(p).action
    found = "hosts/h1/domains/%s" % action.name
    answer = Answer(
        ok=False,
        error_class="permanent",
        message="hv create %s: permanent: the domain was created with other credentials" % found,
        instance={"id": found, "failed": True, "reason": api.REASON_CREDENTIALS_FIXED},
        reason=api.REASON_CREDENTIALS_FIXED,
    )
    step = r.apply(p, action, answer)
    assert (step.status["providerID"], step.status["provider"]) == (found, action.provider)
    assert cond(step.status, api.COND_READY)["reason"] == "Replacing"
    delete = r.plan(proxy(spec__auth={"secretRef": {"name": "creds"}}, status=step.status)).action
    assert (delete.op, delete.phase, delete.provider_id) == ("delete", "replace", found)
