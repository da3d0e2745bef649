"""Running a plan's checks where the data lives: connections, one read-only session per object, verdicts, sentences. Imports only `odcs`."""
