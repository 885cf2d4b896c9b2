from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("documents", "0005_page_images"),
    ]

    operations = [
        migrations.AddField(
            model_name="page",
            name="drawing_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
