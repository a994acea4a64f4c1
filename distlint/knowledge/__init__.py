"""Layer 2, knowledge: facts about torch shipped as data and tables of names."""
