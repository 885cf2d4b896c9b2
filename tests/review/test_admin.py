"""Django admin: every engine and review model is there, history is read-only (even for a
superuser), audit filters, and what the Admins role may do to users and groups: manage ordinary
users, never superusers nor rights beyond the role."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone

from review.models import (
    AuditEvent,
    AuditSample,
    GroundTruth,
    Review,
    ReviewPacket,
    SecondReview,
)
from review.roles import ADMINS, REVIEWERS
from tests.conftest import PASSWORD
from tests.review.conftest import make_packet

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("page_panel")]
User = get_user_model()

MODELS = [
    "reliability_run",
    "reliability_attempt",
    "reliability_issue",
    "review_reviewpacket",
    "review_review",
    "review_groundtruth",
    "review_auditevent",
    "reliability_extraction",
    "reliability_extractiontemplate",
    "reliability_apitoken",
]
READ_ONLY = [
    "reliability_run",
    "reliability_attempt",
    "reliability_issue",
    "review_reviewpacket",
    "review_review",
    "review_groundtruth",
    "review_auditevent",
    "review_auditsample",
    "review_secondreview",
]


@pytest.fixture
def superuser_client(superuser):
    client = Client()
    client.force_login(superuser)
    return client


@pytest.mark.parametrize("model", MODELS)
def test_every_model_is_listed_in_the_admin(superuser_client, model):
    make_packet()
    assert superuser_client.get(reverse(f"admin:{model}_changelist")).status_code == 200


@pytest.mark.parametrize("model", READ_ONLY)
def test_history_cannot_be_added_or_deleted_in_the_admin(superuser_client, model):
    assert superuser_client.get(reverse(f"admin:{model}_add")).status_code == 403


def test_admins_filter_the_audit_log(superuser_client, reviewer):
    packet = make_packet()
    viewer = Client()
    viewer.force_login(reviewer)
    viewer.get(reverse("review:packet", args=[packet.pk]))
    viewer.post(reverse("review:validate", args=[packet.pk]))
    url = reverse("admin:review_auditevent_changelist")
    decided = superuser_client.get(url, {"action__exact": "decided"})
    assert decided.status_code == 200
    assert decided.context["cl"].result_count == 1
    assert AuditEvent.objects.count() == 2


# -- the Admins role in Django admin: ordinary users, never rights beyond the role --------------

NEW_PASSWORD = "Another-long-passphrase-7391"


def perm(label: str) -> Permission:
    app_label, codename = label.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


@pytest.fixture
def admin_client(admin_user):
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.fixture
def operators(roles):
    """A group a superuser made with a right the Admins role does not have."""
    group = Group.objects.create(name="Operators")
    group.permissions.add(perm("auth.delete_user"))
    return group


def user_form(user, **changes):
    """The user change form as Django admin posts it: the account as it is, then `changes`
    (a flag given as False is left out, as an unticked checkbox is)."""
    joined = timezone.localtime(user.date_joined)
    data = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": user.is_active,
        "is_staff": user.is_staff,
        "is_superuser": user.is_superuser,
        "groups": [g.pk for g in user.groups.all()],
        "user_permissions": [p.pk for p in user.user_permissions.all()],
        "date_joined_0": joined.strftime("%Y-%m-%d"),
        "date_joined_1": joined.strftime("%H:%M:%S"),
        **changes,
    }
    return {k: ("on" if v is True else v) for k, v in data.items() if v is not False}


def change(client, user, **changes):
    return client.post(f"/admin/auth/user/{user.pk}/change/", user_form(user, **changes))


def state(user):
    user.refresh_from_db()
    return (
        user.username,
        user.email,
        user.is_active,
        user.is_staff,
        user.is_superuser,
        user.password,
        sorted(g.name for g in user.groups.all()),
        sorted(p.codename for p in user.user_permissions.all()),
    )


SUPERUSER_CHANGES = {
    "demote": lambda roles: {"is_superuser": False},
    "unstaff": lambda roles: {"is_staff": False},
    "deactivate": lambda roles: {"is_active": False},
    "email": lambda roles: {"email": "root@attacker.example"},
    "groups": lambda roles: {"groups": [roles[REVIEWERS].pk]},
    "permissions": lambda roles: {"user_permissions": [perm("auth.delete_user").pk]},
}


@pytest.mark.parametrize("changes", SUPERUSER_CHANGES.values(), ids=SUPERUSER_CHANGES.keys())
def test_an_admin_cannot_change_a_superuser(admin_client, superuser, roles, changes):
    before = state(superuser)
    response = change(admin_client, superuser, **changes(roles))
    assert response.status_code == 403
    assert state(superuser) == before


def test_an_admin_sees_a_superuser_read_only(admin_client, superuser):
    page = admin_client.get(f"/admin/auth/user/{superuser.pk}/change/")
    assert page.status_code == 200
    assert 'name="username"' not in page.content.decode()


def test_an_admin_cannot_reset_a_superusers_password(admin_client, superuser):
    url = f"/admin/auth/user/{superuser.pk}/password/"
    assert admin_client.get(url).status_code == 403
    response = admin_client.post(
        url, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"}
    )
    assert response.status_code == 403
    superuser.refresh_from_db()
    assert superuser.check_password(PASSWORD) and not superuser.check_password(NEW_PASSWORD)


def test_an_admin_cannot_delete_a_superuser(admin_client, superuser):
    url = f"/admin/auth/user/{superuser.pk}/delete/"
    assert admin_client.get(url).status_code == 403
    assert admin_client.post(url, {"post": "yes"}).status_code == 403
    assert User.objects.filter(pk=superuser.pk).exists()


def bulk_delete(client, *users):
    return client.post(
        "/admin/auth/user/",
        {"action": "delete_selected", "_selected_action": [u.pk for u in users], "post": "yes"},
    )


def test_the_bulk_delete_action_deletes_no_superuser(admin_client, admin_user, superuser, reviewer):
    bulk_delete(admin_client, superuser, reviewer)  # not offered to Admins: nothing happens
    assert User.objects.filter(pk__in=[superuser.pk, reviewer.pk]).count() == 2

    # Even an Admin a superuser let delete users deletes no superuser, in bulk or alone.
    admin_user.user_permissions.add(perm("auth.delete_user"))
    assert bulk_delete(admin_client, superuser, reviewer).status_code == 403
    assert User.objects.filter(pk__in=[superuser.pk, reviewer.pk]).count() == 2
    response = admin_client.post(f"/admin/auth/user/{superuser.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert bulk_delete(admin_client, reviewer).status_code == 302
    assert not User.objects.filter(pk=reviewer.pk).exists()
    assert User.objects.filter(pk=superuser.pk, is_superuser=True).exists()


@pytest.mark.parametrize("target", ["reviewer", "admin_user"], ids=["another", "themselves"])
def test_an_admin_cannot_make_anyone_a_superuser_or_hand_out_permissions(
    admin_client, request, target
):
    user = request.getfixturevalue(target)
    response = change(
        admin_client,
        user,
        is_superuser=True,
        user_permissions=[perm("auth.delete_user").pk, perm("auth.change_group").pk],
    )
    assert response.status_code == 302  # saved: the two fields are read-only for Admins
    user.refresh_from_db()
    assert not user.is_superuser and not user.user_permissions.exists()
    assert not user.has_perm("auth.delete_user")


@pytest.mark.parametrize("target", ["reviewer", "admin_user"], ids=["another", "themselves"])
def test_an_admin_cannot_give_a_group_beyond_the_admins_role(
    admin_client, request, target, operators
):
    user = request.getfixturevalue(target)
    before = state(user)
    groups = [*user.groups.values_list("pk", flat=True), operators.pk]
    response = change(admin_client, user, groups=groups)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["groups"]
    assert state(user) == before
    page = admin_client.get(f"/admin/auth/user/{user.pk}/change/").content.decode()
    assert "Operators" not in page


def test_an_admin_cannot_change_an_account_holding_more_than_the_admins_role(
    admin_client, django_user_model, operators
):
    trusted = django_user_model.objects.create_user("tess", password=PASSWORD, is_staff=True)
    trusted.groups.add(operators)
    before = state(trusted)
    assert change(admin_client, trusted, is_active=False).status_code == 403
    response = admin_client.post(
        f"/admin/auth/user/{trusted.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert response.status_code == 403
    assert state(trusted) == before


def test_an_admin_manages_ordinary_users_within_the_role(admin_client, reviewer, roles):
    response = change(
        admin_client,
        reviewer,
        email="rita@hospital.example",
        is_staff=True,
        groups=[roles[REVIEWERS].pk, roles[ADMINS].pk],
    )
    assert response.status_code == 302
    reviewer.refresh_from_db()
    assert reviewer.email == "rita@hospital.example" and reviewer.is_staff
    assert sorted(g.name for g in reviewer.groups.all()) == [ADMINS, REVIEWERS]

    response = admin_client.post(
        f"/admin/auth/user/{reviewer.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert response.status_code == 302
    reviewer.refresh_from_db()
    assert reviewer.check_password(NEW_PASSWORD)

    assert change(admin_client, reviewer, is_active=False, groups=[]).status_code == 302
    reviewer.refresh_from_db()
    assert not reviewer.is_active and not reviewer.groups.exists()


def test_an_admin_adds_users_but_never_with_superuser_rights(admin_client, operators):
    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "newcomer",
            "usable_password": "true",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "is_superuser": "on",
            "is_staff": "on",
            "groups": [operators.pk],
            "user_permissions": [perm("auth.delete_user").pk],
        },
    )
    assert response.status_code == 302
    newcomer = User.objects.get(username="newcomer")
    assert not (newcomer.is_superuser or newcomer.is_staff)
    assert not newcomer.groups.exists() and not newcomer.user_permissions.exists()


def group_form(group, permissions):
    return {"name": group.name if group else "Auditors", "permissions": [p.pk for p in permissions]}


def group_permissions(group):
    return sorted(group.permissions.values_list("codename", flat=True))


def test_an_admin_cannot_change_or_add_groups(admin_client, roles):
    reviewers = roles[REVIEWERS]
    before = group_permissions(reviewers)
    wider = [*reviewers.permissions.all(), perm("review.export_ground_truth")]
    url = f"/admin/auth/group/{reviewers.pk}/change/"
    assert admin_client.post(url, group_form(reviewers, wider)).status_code == 403
    add = admin_client.post("/admin/auth/group/add/", group_form(None, [perm("auth.delete_user")]))
    assert add.status_code == 403
    assert group_permissions(reviewers) == before
    assert not Group.objects.filter(name="Auditors").exists()


def test_whoever_edits_groups_without_being_superuser_stays_within_the_roles(
    admin_client, admin_user, roles, operators
):
    # Suppose a superuser let this Admin edit groups.
    admin_user.user_permissions.add(perm("auth.change_group"), perm("auth.add_group"))
    reviewers, admins = roles[REVIEWERS], roles[ADMINS]
    for group, extra in ((reviewers, "review.export_ground_truth"), (admins, "auth.delete_user")):
        before = group_permissions(group)
        response = admin_client.post(
            f"/admin/auth/group/{group.pk}/change/",
            group_form(group, [*group.permissions.all(), perm(extra)]),
        )
        assert response.status_code == 200, group.name
        assert response.context["adminform"].form.errors["permissions"]
        assert group_permissions(group) == before

    response = admin_client.post(
        "/admin/auth/group/add/", group_form(None, [perm("auth.delete_user")])
    )
    assert response.status_code == 200 and not Group.objects.filter(name="Auditors").exists()
    # A group already beyond the role is not theirs to change; the roles keep their names.
    assert (
        admin_client.post(
            f"/admin/auth/group/{operators.pk}/change/", group_form(operators, [])
        ).status_code
        == 403
    )
    response = admin_client.post(
        f"/admin/auth/group/{reviewers.pk}/change/",
        {"name": "Everyone", "permissions": [p.pk for p in reviewers.permissions.all()]},
    )
    assert response.status_code == 302
    assert Group.objects.filter(name=REVIEWERS).exists()

    # Within the role is theirs to do.
    response = admin_client.post(
        "/admin/auth/group/add/", group_form(None, [perm("review.view_auditevent")])
    )
    assert response.status_code == 302
    assert group_permissions(Group.objects.get(name="Auditors")) == ["view_auditevent"]


def test_a_superuser_keeps_full_power_over_users_and_groups(
    superuser_client, reviewer, roles, django_user_model
):
    other_root = django_user_model.objects.create_superuser("root2", password=PASSWORD)
    response = superuser_client.post(
        f"/admin/auth/user/{other_root.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert response.status_code == 302
    other_root.refresh_from_db()
    assert other_root.check_password(NEW_PASSWORD)

    delete_user = perm("auth.delete_user")
    response = change(
        superuser_client, reviewer, is_superuser=True, user_permissions=[delete_user.pk]
    )
    assert response.status_code == 302
    reviewer.refresh_from_db()
    assert reviewer.is_superuser and list(reviewer.user_permissions.all()) == [delete_user]

    admins = roles[ADMINS]
    response = superuser_client.post(
        f"/admin/auth/group/{admins.pk}/change/",
        group_form(admins, [*admins.permissions.all(), delete_user]),
    )
    assert response.status_code == 302
    assert admins.permissions.filter(pk=delete_user.pk).exists()


# -- history is never edited in Django admin, not even by a superuser ---------------------------

HISTORY = [ReviewPacket, Review, GroundTruth, AuditSample, SecondReview, AuditEvent]


def test_no_admin_page_or_inline_lets_a_superuser_change_history(superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    assert set(HISTORY) <= set(admin.site._registry)
    shown = []
    for model, model_admin in admin.site._registry.items():
        pages = [model_admin] if model in HISTORY else []
        for inline_class in model_admin.inlines:
            inline = inline_class(model, admin.site)
            if inline.model in HISTORY:
                pages.append(inline)
        for page in pages:
            shown.append(page)
            add = (
                page.has_add_permission(request, None)
                if isinstance(page, admin.options.InlineModelAdmin)
                else page.has_add_permission(request)
            )
            assert not add, page
            assert not page.has_change_permission(request, None), page
            assert not page.has_delete_permission(request, None), page
    assert len(shown) >= len(HISTORY)


@pytest.fixture
def history(settings, reviewer):
    """One row of each history model, made by the review services."""
    from tests.review.test_quality_checks import accept, correct

    settings.AUDIT_SAMPLE_RATE = 1.0
    settings.SECOND_REVIEW_ON_CORRECTION = True
    accept(1)
    correct(make_packet(sha="e"), reviewer)
    rows = {model: model.objects.order_by("pk").first() for model in HISTORY}
    assert all(rows.values()), rows
    return rows


def snapshot():
    return {model: list(model.objects.order_by("pk").values()) for model in HISTORY}


def test_a_superuser_cannot_change_or_delete_history_in_the_admin(superuser_client, history):
    before = snapshot()
    for model, row in history.items():
        name = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        page = superuser_client.get(reverse(f"{name}_change", args=[row.pk]))
        assert page.status_code == 200 and 'name="_save"' not in page.content.decode(), model
        data = {"status": "decided", "locked_by": "", "version": 99, "dominant_type": "other"}
        changed = superuser_client.post(reverse(f"{name}_change", args=[row.pk]), data)
        assert changed.status_code == 403, model
        deleted = superuser_client.post(reverse(f"{name}_delete", args=[row.pk]), {"post": "yes"})
        assert deleted.status_code == 403, model
        superuser_client.post(
            reverse(f"{name}_changelist"),
            {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"},
        )
    # Nor through what it hangs on: deleting the document would take its history with it.
    document = history[GroundTruth].document
    response = superuser_client.post(
        reverse("admin:documents_document_delete", args=[document.pk]), {"post": "yes"}
    )
    assert response.status_code == 403
    assert snapshot() == before
