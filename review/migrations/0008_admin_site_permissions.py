"""Admins manage in Django admin what the README says they do: the audit log, users, API
tokens and login lockouts (they got 403 on all of these)."""

from django.db import migrations

GRANTS = [
    ("review", "view_auditevent"),
    ("auth", "view_user"),
    ("auth", "add_user"),
    ("auth", "change_user"),
    ("auth", "view_group"),
    ("reliability", "view_apitoken"),
    ("reliability", "change_apitoken"),
    ("axes", "view_accessattempt"),
    ("axes", "delete_accessattempt"),
]


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="Admins")
    for app_label, codename in GRANTS:
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0007_audits_second_reviews"),
        ("reliability", "0004_run_waiting_llm_accounting_response_cache"),
        ("axes", "0010_accessattemptexpiration"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
