"""Admins read the learning loop's attempts and pin or roll back the trained model in Django
admin (review.roles.ADMIN_SITE_PERMISSIONS)."""

from django.db import migrations

GRANTS = [
    ("reliability", "view_trainedclassifiermodel"),
    ("reliability", "change_trainedclassifiermodel"),
    ("reliability", "view_learningattempt"),
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
        ("review", "0014_learning_queue_and_label_issues"),
        ("reliability", "0010_learning_loop"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
