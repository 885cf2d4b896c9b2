from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from review.models import ReviewPacket
from review.serializers import packet_as_dict


class Command(BaseCommand):
    help = "Write a review packet as JSON (to stdout, or to --out)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("packet_id", type=int)
        parser.add_argument("--out")

    def handle(self, *args: Any, **options: Any) -> None:
        packet = (
            ReviewPacket.objects.select_related("run", "document")
            .filter(pk=options["packet_id"])
            .first()
        )
        if packet is None:
            raise CommandError(f"No packet {options['packet_id']}.")
        text = json.dumps(packet_as_dict(packet), indent=2)
        if options["out"]:
            Path(options["out"]).write_text(text)
            self.stdout.write(f"Wrote {options['out']}")
        else:
            self.stdout.write(text)
