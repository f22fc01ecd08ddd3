"""The policies ``policy_runner.py --policy_type`` accepts (a module of its own: ``--help`` imports nothing heavy)."""

POLICY_TYPES = ("zero_action", "scripted_pick_and_place")
