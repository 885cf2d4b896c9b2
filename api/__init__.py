"""The JSON API (django-ninja) over the apps' services and selectors: api.urls is the entry."""
