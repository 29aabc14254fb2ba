package io.heartgate.protocol;

/**
 * Says which setting of a configuration is wrong and why, in the configuration's own terms
 * ({@code firstByteTimeout}, "must be positive"), so that a configuration knows nothing of the
 * command line that filled it; a program's {@code main} turns it into {@code --flag: why}.
 */
public final class InvalidSettingException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final String setting;
    private final String problem;

    /**
     * @param setting the setting's name in its configuration, such as {@code firstByteTimeout}
     * @param problem what is wrong, as a phrase that follows the name: "must be positive, was 0s"
     */
    public InvalidSettingException(String setting, String problem) {
        super(setting + " " + problem);
        this.setting = setting;
        this.problem = problem;
    }

    /** Returns the setting's name in its configuration. */
    public String setting() {
        return setting;
    }

    /** Returns what is wrong with it. */
    public String problem() {
        return problem;
    }
}
