"""The project checked as a whole: import layers, public API vocabulary, project text, notebooks, start-up imports."""
