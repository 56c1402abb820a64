"""Trial inputs come from seeds a candidate cannot work out: the published seed is mixed with a
secret only the reference holds (session.trial_seed)."""

from kforge_worker.common import session
from kforge_worker.roles.reference import ReferenceSession


def test_a_trial_seed_depends_on_the_secret_and_on_the_trial():
    a, b = session.input_secret(), session.input_secret()
    assert a != b and 0 <= a < 2**63
    assert session.trial_seed(a, 7, 0) == session.trial_seed(a, 7, 0)
    assert session.trial_seed(a, 7, 0) != session.trial_seed(b, 7, 0)
    assert session.trial_seed(a, 7, 0) != session.trial_seed(a, 7, 1)
    assert session.trial_seed(a, 7, 0) != session.trial_seed(a, 8, 0)
    assert all(0 <= session.trial_seed(a, 7, t) < 2**63 for t in range(100))


def test_the_old_public_rule_no_longer_gives_the_inputs_seed():
    public = (7 * 1_000_003 + 7919 * 1) % (2**31 - 1)
    assert session.trial_seed(session.input_secret(), 7, 0) != public


def test_every_evaluation_a_reference_serves_gets_a_new_secret():
    ref = ReferenceSession()
    first = ref.trial_seed(7, 0)
    assert ref.trial_seed(7, 0) == first  # the same evaluation draws a trial again the same way
    ref.reset({})
    assert ref.trial_seed(7, 0) != first

