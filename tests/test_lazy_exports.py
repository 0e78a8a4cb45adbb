"""lazy_exports: a package's names imported from their submodules on
first access, and stored so that the next access is a plain lookup."""

import sys

import pytest

from tfrec_tricks.lazy_exports import lazy_exports


def test_a_name_is_imported_on_first_access_and_kept():
    namespace = {}
    getattr_, dir_ = lazy_exports("email", namespace, {"Charset": "charset"})
    assert "Charset" in dir_() and "Charset" not in namespace
    charset = getattr_("Charset")
    assert charset is sys.modules["email.charset"].Charset
    assert namespace["Charset"] is charset


def test_an_unknown_name_is_an_attribute_error_naming_it():
    getattr_, _ = lazy_exports("email", {}, {})
    with pytest.raises(AttributeError, match="'email' has no attribute 'x'"):
        getattr_("x")


def test_the_packages_resolve_their_lazy_names():
    from tfrec_tricks import heads, objectives, recommendation

    assert heads.SoftmaxCPR.__module__ == "tfrec_tricks.heads.cpr.softmax_cpr"
    assert objectives.FullSoftmax.__name__ == "FullSoftmax"
    assert recommendation.recommend_frame.__module__.endswith(".job")
    assert "TiedSoftmax" in dir(heads) and "Objective" in dir(objectives)
    with pytest.raises(AttributeError, match="tfrec_tricks.heads"):
        heads.NoSuchHead
