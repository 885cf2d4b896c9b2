"""Reading and uploading documents needs a role: grant it to Reviewers and Admins."""

from django.db import migrations

GRANTS = {"Reviewers": ["view_document", "add_document"],
          "Admins": ["view_document", "add_document"]}


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GRANTS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*Permission.objects.filter(
            content_type__app_label="documents", codename__in=codenames))


class Migration(migrations.Migration):
    dependencies = [("review", "0004_extraction_fields"), ("documents", "0002_document_options")]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
