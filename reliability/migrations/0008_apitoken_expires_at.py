from datetime import timedelta

from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def expire_existing(apps, schema_editor):
    """Tokens made before tokens expired get API_TOKEN_DAYS from now: a grace period, not an
    outage (the alternative, expiring them at once, would stop every integration mid-run)."""
    ApiToken = apps.get_model("reliability", "ApiToken")
    ApiToken.objects.filter(expires_at__isnull=True).update(
        expires_at=timezone.now() + timedelta(days=settings.API_TOKEN_DAYS)
    )


class Migration(migrations.Migration):
    dependencies = [("reliability", "0007_run_wait_and_error_codes")]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunPython(expire_existing, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(),
        ),
    ]
