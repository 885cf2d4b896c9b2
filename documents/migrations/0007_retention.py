from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0006_page_drawing_lease"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="document",
            name="document_status_valid",
        ),
        migrations.AddField(
            model_name="document",
            name="deleted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="document",
            name="sha256",
            field=models.CharField(blank=True, max_length=64, null=True, unique=True),
        ),
        migrations.AlterField(
            model_name="document",
            name="status",
            field=models.CharField(
                choices=[
                    ("uploaded", "Uploaded"),
                    ("ingesting", "Ingesting"),
                    ("ready", "Ready"),
                    ("failed", "Failed"),
                    ("deleted", "Deleted (retention)"),
                ],
                default="uploaded",
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="document",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("status__in", ["uploaded", "ingesting", "ready", "failed", "deleted"])
                ),
                name="document_status_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="document",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("status", "deleted"), _negated=True),
                    models.Q(
                        ("deleted_at__isnull", False),
                        ("original_filename", ""),
                        ("sha256__isnull", True),
                    ),
                    _connector="OR",
                ),
                name="document_deleted_is_emptied",
            ),
        ),
    ]
