"""Adapters that speak to one member cluster each (shoal, slurm, ray, openpai) behind one
contract (`contract.MemberAdapter`)."""
