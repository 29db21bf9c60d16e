package dataexec
