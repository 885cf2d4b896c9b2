from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from config.env import require_production_key

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
require_production_key()  # no serving with DEBUG off and the public key
