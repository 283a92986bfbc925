"""Reusable widgets: result list, note preview, status bar, note and folder trees."""
