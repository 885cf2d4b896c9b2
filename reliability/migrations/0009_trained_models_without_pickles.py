from django.db import migrations

PICKLE_FORMAT = b"VETTED-TRAINED-CLASSIFIER-1\n"
NOTE = (
    " Deactivated when trained models stopped being pickles (reading one can run code): "
    "retrain with manage.py train_classifier."
)


def deactivate_pickles(apps, schema_editor):
    """A model stored as a pickle is never loaded again (engine.classifiers.trained refuses
    it), so it cannot stay the active one: the rules classify until a model is retrained.
    Its row stays, with its figures, as history."""
    Model = apps.get_model("reliability", "TrainedClassifierModel")
    for row in Model.objects.filter(active=True):
        if bytes(row.blob[: len(PICKLE_FORMAT)]) == PICKLE_FORMAT:
            row.active = False
            row.decision = (row.decision + NOTE).strip()
            row.save(update_fields=["active", "decision"])


class Migration(migrations.Migration):
    dependencies = [("reliability", "0008_apitoken_expires_at")]

    operations = [migrations.RunPython(deactivate_pickles, migrations.RunPython.noop)]
