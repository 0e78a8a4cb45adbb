"""Keras layers of tfrec_tricks; each works under tf-keras and Keras 3."""
