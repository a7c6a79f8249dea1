/* cmd.h - the kt subcommands.  Each takes the arguments after its name (argv[0] is the
 * subcommand) and returns the exit status: 0 success, 1 bad input, 2 internal failure.
 * main.c holds the table that maps names to these functions. */
#ifndef KT_CMD_H
#define KT_CMD_H

enum { KT_EXIT_OK = 0, KT_EXIT_INPUT = 1, KT_EXIT_INTERNAL = 2 };

int kt_cmd_cache(int argc, char **argv);
int kt_cmd_check(int argc, char **argv);
int kt_cmd_space(int argc, char **argv);
int kt_cmd_farm(int argc, char **argv);
int kt_cmd_generate(int argc, char **argv);
int kt_cmd_tune(int argc, char **argv);
int kt_cmd_worker(int argc, char **argv);
int kt_cmd_nvrtc(int argc, char **argv);
int kt_cmd_refactor(int argc, char **argv);
int kt_cmd_report(int argc, char **argv);

#endif
