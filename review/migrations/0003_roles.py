"""The two roles: Reviewers (clinicians) and Admins."""

from django.db import migrations

REVIEWER_PERMISSIONS = ["review_packets"]
ADMIN_PERMISSIONS = ["review_packets", "export_ground_truth", "view_metrics"]


def create_roles(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in (("Reviewers", REVIEWER_PERMISSIONS), ("Admins", ADMIN_PERMISSIONS)):
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*Permission.objects.filter(
            content_type__app_label="review", codename__in=codenames))


class Migration(migrations.Migration):
    dependencies = [("review", "0002_reviews_audit"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
