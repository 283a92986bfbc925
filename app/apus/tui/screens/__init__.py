"""Full screens of the app: search, browse, reader, status, help and the setup wizard."""
