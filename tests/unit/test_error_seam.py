"""The provider-operation seam (core/error_seam.py): the id, classify and wrap prologue every provider
operation runs. Table tests on a fake provider for each rule (each class, the chaining policy,
what passes untouched), then the one rule the four providers used to differ on: a malformed id
is Permanent and chained to its ``ValueError`` on every one of them."""

from __future__ import annotations

import traceback

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.error_seam import ErrorSeam
from unit.libvirt_support import make as libvirt_make
from unit.test_gcp_provider import make as gcp_make
from unit.test_kubernetes_provider_offline import provider as kube_provider
from unit.test_local_provider import _provider as local_provider


class Missing(Exception):
    """The fake backend's "no such object" answer, with its proof."""


class OverQuota(Exception):
    pass


class Refused(Exception):
    pass


class Flaky(Exception):
    pass


class SdkError(Exception):
    """An SDK error whose text carries what must not reach a module's ``msg``."""


TABLE = ((Missing, errors.NOT_FOUND), (OverQuota, errors.QUOTA_EXCEEDED), (Refused, errors.PERMANENT))
SECRET = "Authorization: Bearer s3cr3t-token"


def parse_id(provider_id) -> str:
    if not isinstance(provider_id, str) or not provider_id.startswith("fake/") or provider_id == "fake/":
        raise ValueError("malformed fake provider id %r: want fake/<name>" % (provider_id,))
    return provider_id[len("fake/") :]


class FakeProvider(ErrorSeam):
    """A provider with nothing but the seam: its hooks record what they were given."""

    _parse_id = staticmethod(parse_id)

    def __init__(self):
        self.name = "fake-eu"  # the configured name, which every error must carry
        self.failed = []  # (op, provider_id, exc, hints) per _fail call
        self.reached = []  # what the bodies were given

    def _fail(self, op: str, provider_id: str, exc: BaseException, **hints) -> errors.ProviderError:
        self.failed.append((op, provider_id, exc, hints))
        if isinstance(exc, SdkError):  # rendered short, as kubernetes renders an ApiException
            return errors.wrap(errors.PERMANENT, op, self.name, provider_id, "403 Forbidden")
        cls = next((c for kind, c in TABLE if isinstance(exc, kind)), errors.TRANSIENT)
        return errors.wrap(cls, op, self.name, provider_id, exc)

    def get(self, provider_id: str, raising: BaseException | None = None, **hints):
        with self.operation("get", provider_id, **hints) as name:
            self.reached.append(name)
            if raising is not None:
                raise raising
            return "instance %s" % name

    def list_by_tag(self, raising: BaseException | None = None) -> list:
        with self.operation("list", parse=False) as parts:
            self.reached.append(parts)
            if raising is not None:
                raise raising
            return []


def raised(call) -> errors.ProviderError:
    with pytest.raises(errors.ProviderError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    "exc,error_class",
    [
        (Missing("no object fake/a"), errors.NOT_FOUND),
        (OverQuota("quota 10 of 10"), errors.QUOTA_EXCEEDED),
        (Refused("bad image"), errors.PERMANENT),
        (Flaky("connection reset"), errors.TRANSIENT),
        (ValueError("a value in the body"), errors.TRANSIENT),  # not a malformed id: only parsing is
        (KeyError("key"), errors.TRANSIENT),  # unclassified means Transient
        (TypeError("a bug"), errors.TRANSIENT),
    ],
)
def test_each_class_comes_from_the_hook_with_op_name_and_id(exc, error_class):
    provider = FakeProvider()
    err = raised(lambda: provider.get("fake/a", exc))
    assert (err.error_class, err.op, err.provider_name, err.provider_id) == (
        error_class,
        "get",
        "fake-eu",
        "fake/a",
    )
    assert provider.failed == [("get", "fake/a", exc, {})]
    assert str(err) == "fake-eu get fake/a: %s: %s" % (error_class, exc)
    assert errors.class_of(err) == error_class


def test_an_operation_on_no_instance_names_none_and_parses_nothing():
    provider = FakeProvider()
    assert provider.list_by_tag() == [] and provider.reached == [None]
    err = raised(lambda: provider.list_by_tag(Flaky("timeout")))
    assert (err.op, err.provider_id, err.error_class) == ("list", "", errors.TRANSIENT)
    assert str(err) == "fake-eu list: transient: timeout"


def test_the_parsed_id_is_the_target_and_a_success_passes_through():
    provider = FakeProvider()
    assert provider.get("fake/a") == "instance a"
    assert provider.reached == ["a"] and provider.failed == []


@pytest.mark.parametrize("bad", ["", "fake/", "other/a", "fake", None, 42])
def test_a_malformed_id_is_permanent_before_the_body_runs(bad):
    provider = FakeProvider()
    err = raised(lambda: provider.get(bad, Missing("must not be reached")))
    assert (err.error_class, err.op, err.provider_name, err.provider_id) == (
        errors.PERMANENT,
        "get",
        "fake-eu",
        bad,
    )
    assert "malformed fake provider id %r" % (bad,) in str(err)
    assert isinstance(err.__cause__, ValueError) and err.__cause__ is err.cause
    assert provider.reached == [] and provider.failed == []  # never touched, never NotFound


def test_parse_false_leaves_an_id_the_operation_made_alone():
    provider = FakeProvider()
    with provider.operation("create", "not parsable", parse=False) as parts:
        assert parts is None
    err = raised(
        lambda: _body_raises(provider.operation("create", "not parsable", parse=False), Refused("x"))
    )
    assert (err.op, err.provider_id, err.error_class) == ("create", "not parsable", errors.PERMANENT)


def _body_raises(seam, exc: BaseException) -> None:
    with seam:
        raise exc


@pytest.mark.parametrize(
    "inner",
    [
        errors.not_found("get", "fake-eu", "fake/a", "proven gone: no object fake/a"),
        errors.quota_exceeded("get", "fake-eu", "fake/a", OverQuota("classified at the source")),
        errors.credentials_fixed("get", "fake-eu", "fake/a", "fixed at creation"),
        errors.transient("get", "other-provider", "other/id", "someone else's error"),
    ],
)
def test_a_provider_error_from_the_body_passes_unchanged(inner):
    """Classified where the knowledge was (a NotFound with its proof): never re-classified,
    never wrapped again (its message would repeat), its own cause and reason kept."""
    provider = FakeProvider()
    cause, reason, text = inner.__cause__, inner.reason, str(inner)
    err = raised(lambda: provider.get("fake/a", inner))
    assert err is inner
    assert (err.__cause__, err.reason, str(err)) == (cause, reason, text)
    assert provider.failed == []


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3), GeneratorExit()])
def test_what_is_not_an_exception_is_neither_classified_nor_swallowed(exc):
    provider = FakeProvider()
    with pytest.raises(type(exc)) as caught:
        provider.get("fake/a", exc)
    assert caught.value is exc and exc.__cause__ is None
    assert provider.failed == []


def test_the_cause_is_exactly_what_the_body_raised():
    """One policy for every provider: ``raise ... from exc`` with the body's exception, so
    ``class_of``, the callers and the tests reach the backend's error (docs/contract.md)."""
    provider = FakeProvider()
    backend_error = Flaky("reset by peer")
    err = raised(lambda: provider.get("fake/a", backend_error))
    assert err.__cause__ is backend_error and err.__suppress_context__
    assert err.cause is backend_error


def test_an_exception_raised_while_handling_another_keeps_its_own_context():
    provider = FakeProvider()

    def body():
        with provider.operation("delete", "fake/a"):
            try:
                raise Missing("the first read")
            except Missing:
                raise Flaky("the retry failed") from None

    err = raised(body)
    assert isinstance(err.__cause__, Flaky) and err.error_class == errors.TRANSIENT
    assert "the first read" not in "".join(traceback.format_exception(err))


def test_the_message_is_what_the_hook_rendered_and_the_sdk_error_stays_reachable():
    """What becomes the module's ``msg`` (and the controller's Event) is the hook's short
    rendering; the SDK's own text is only on the cause, for code and tracebacks."""
    provider = FakeProvider()
    sdk = SdkError("HTTP response headers: %s; body: {...}" % SECRET)
    err = raised(lambda: provider.get("fake/a", sdk))
    assert str(err) == "fake-eu get fake/a: permanent: 403 Forbidden"
    assert SECRET not in str(err) and SECRET not in err.message
    assert err.__cause__ is sdk


def test_hints_reach_the_hook_unchanged():
    provider = FakeProvider()
    raised(lambda: provider.get("fake/a", Missing("gone"), proof="pods"))
    assert provider.failed[0][3] == {"proof": "pods"}


def test_nested_seams_classify_once():
    """kubernetes' sync_auth: an inner seam with a NotFound proof inside the operation's own."""
    provider = FakeProvider()

    def body():
        with provider.operation("sync_auth", "fake/a") as name:
            assert name == "a"
            with provider.operation("sync_auth", "fake/a", parse=False, proof="pods"):
                raise Missing("no object fake/a")

    err = raised(body)
    assert err.error_class == errors.NOT_FOUND and isinstance(err.__cause__, Missing)
    assert [call[3] for call in provider.failed] == [{"proof": "pods"}]


# -- the four providers: one policy for a malformed id ------------------------------------


def _four(tmp_path, image_server) -> list:
    local = local_provider(tmp_path / "local")
    gcp, _seam = gcp_make()
    kube = kube_provider(tmp_path)
    libvirt, _dialer, _hosts = libvirt_make(image_server)
    return [local, gcp, kube, libvirt]


@pytest.mark.parametrize("op", ["get", "delete", "sync_auth"])
def test_every_provider_chains_a_malformed_id_to_its_value_error(tmp_path, image_server, op):
    """gcp raised it ``from None``, the others ``from exc``: now the seam does it, once."""
    for provider in _four(tmp_path, image_server):
        args = (
            ("not/an/id/at/all/", None, Deadline(5))
            if op == "sync_auth"
            else ("not/an/id/at/all/", Deadline(5))
        )
        err = raised(lambda provider=provider, args=args: getattr(provider, op)(*args))
        assert (err.error_class, err.op, err.provider_name) == (errors.PERMANENT, op, provider.name), err
        assert isinstance(err.__cause__, ValueError) and "malformed" in str(err.__cause__), err
        assert str(err).startswith("%s %s not/an/id/at/all/: permanent: malformed" % (provider.name, op)), err
