"""Admins register webhook endpoints and read the delivery log in Django admin."""

from django.db import migrations

CODENAMES = [
    "view_webhookendpoint",
    "add_webhookendpoint",
    "change_webhookendpoint",
    "delete_webhookendpoint",
    "view_webhookdelivery",
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
    group.permissions.add(
        *Permission.objects.filter(content_type__app_label="integrations", codename__in=CODENAMES)
    )


class Migration(migrations.Migration):
    dependencies = [
        ("integrations", "0001_webhooks_and_sso_identities"),
        ("review", "0005_document_permissions"),
    ]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
