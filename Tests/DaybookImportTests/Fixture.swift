import Foundation

/// A hand-written export in the Health app's format, with the quirks of real ones: an
/// internal DTD, every timestamp printed at the export-time offset +0200 (winter data too),
/// device strings whose pointer changes per record, a byte-identical repeat, the same
/// interval with two values, zero-length samples, hourly buckets ending at :59:59, a
/// 30,000-step manual entry, anonymised source names with the version as the only clue,
/// the units count, km, mi, m, kcal, Cal and kJ, metadata ids, HKTimeZone on a trip,
/// a night's sleep records (asleep, in bed, awake), an oxygen saturation as a fraction,
/// a day-long resting heart rate, a scale's body mass, records inside a Correlation, a
/// Workout with metadata of its own, and broken records.
enum Fixture {
    static let watch = "&lt;&lt;HKDevice: 0x%@&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,2, software:10.2&gt;"
    static let phone = "&lt;&lt;HKDevice: 0x%@&gt;, name:iPhone, manufacturer:Apple Inc., model:iPhone, hardware:iPhone14,5, software:17.2&gt;"

    static func watch(_ pointer: String) -> String { watch.replacingOccurrences(of: "%@", with: pointer) }
    static func phone(_ pointer: String) -> String { phone.replacingOccurrences(of: "%@", with: pointer) }

    static var xml: String { """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE HealthData [
    <!-- HealthKit Export Version: 13 -->
    <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
    <!ATTLIST HealthData
      locale CDATA #REQUIRED
    >
    <!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
    <!ATTLIST Record
      type          CDATA #REQUIRED
      unit          CDATA #IMPLIED
      value         CDATA #IMPLIED
      sourceName    CDATA #REQUIRED
      sourceVersion CDATA #IMPLIED
      device        CDATA #IMPLIED
      creationDate  CDATA #IMPLIED
      startDate     CDATA #REQUIRED
      endDate       CDATA #REQUIRED
    >
    <!-- Note: Any Records that appear as children of a correlation also appear as top-level records in this document. -->
    ]>
    <HealthData locale="de_DE">
     <ExportDate value="2024-08-01 20:15:00 +0200"/>
     <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-04-01" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale" HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet" HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse="None"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281d3e0a0"))" unit="count" creationDate="2024-01-10 10:12:31 +0200" startDate="2024-01-10 10:00:00 +0200" endDate="2024-01-10 10:10:00 +0200" value="1000"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281d3f5c0"))" unit="count" creationDate="2024-01-10 10:22:02 +0200" startDate="2024-01-10 10:10:00 +0200" endDate="2024-01-10 10:20:00 +0200" value="800"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830a4b40"))" unit="count" creationDate="2024-01-10 11:00:07 +0200" startDate="2024-01-10 10:00:00 +0200" endDate="2024-01-10 10:59:59 +0200" value="2400"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830a4b40"))" unit="count" creationDate="2024-01-10 11:00:07 +0200" startDate="2024-01-10 10:00:00 +0200" endDate="2024-01-10 10:59:59 +0200" value="2400"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830a5c80"))" unit="count" creationDate="2024-01-10 12:00:09 +0200" startDate="2024-01-10 11:00:00 +0200" endDate="2024-01-10 11:59:59 +0200" value="600"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830a6d00"))" unit="count" creationDate="2024-01-10 12:00:09 +0200" startDate="2024-01-10 11:00:00 +0200" endDate="2024-01-10 11:59:59 +0200" value="900"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Health" sourceVersion="17.2" unit="count" creationDate="2024-01-10 21:40:00 +0200" startDate="2024-01-10 13:00:00 +0200" endDate="2024-01-10 14:00:00 +0200" value="30000">
      <MetadataEntry key="HKWasUserEntered" value="1"/>
     </Record>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830a7e40"))" unit="count" creationDate="2024-01-10 10:05:00 +0200" startDate="2024-01-10 10:05:00 +0200" endDate="2024-01-10 10:05:00 +0200" value="50"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830a8f80"))" unit="count" creationDate="2024-01-10 16:00:00 +0200" startDate="2024-01-10 16:00:00 +0200" endDate="2024-01-10 16:00:00 +0200" value="20"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830a9100"))" unit="count" creationDate="2024-03-31 04:00:12 +0200" startDate="2024-03-31 02:00:00 +0200" endDate="2024-03-31 03:59:59 +0200" value="120"/>
     <Record type="HKQuantityTypeIdentifierDistanceWalkingRunning" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00120"))" unit="km" creationDate="2024-07-15 07:10:30 +0200" startDate="2024-07-15 07:00:00 +0200" endDate="2024-07-15 07:10:00 +0200" value="0.8"/>
     <Record type="HKQuantityTypeIdentifierDistanceWalkingRunning" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830b0200"))" unit="mi" creationDate="2024-07-15 07:15:30 +0200" startDate="2024-07-15 07:00:00 +0200" endDate="2024-07-15 07:15:00 +0200" value="0.5"/>
     <Record type="HKQuantityTypeIdentifierDistanceWalkingRunning" sourceName="Strava" sourceVersion="2024.07" unit="m" creationDate="2024-07-15 18:25:00 +0200" startDate="2024-07-15 18:00:00 +0200" endDate="2024-07-15 18:20:00 +0200" value="1200">
      <MetadataEntry key="HKExternalUUID" value="A1B2C3D4-0000-4000-8000-000000000001"/>
      <MetadataEntry key="HKTimeZone" value="Europe/Berlin"/>
     </Record>
     <Record type="HKQuantityTypeIdentifierActiveEnergyBurned" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00340"))" unit="kcal" creationDate="2024-07-15 07:10:30 +0200" startDate="2024-07-15 07:00:00 +0200" endDate="2024-07-15 07:10:00 +0200" value="50"/>
     <Record type="HKQuantityTypeIdentifierActiveEnergyBurned" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830b0460"))" unit="Cal" creationDate="2024-07-15 07:10:30 +0200" startDate="2024-07-15 07:00:00 +0200" endDate="2024-07-15 07:10:00 +0200" value="40"/>
     <Record type="HKQuantityTypeIdentifierActiveEnergyBurned" sourceName="Lose It!" sourceVersion="16.1" unit="kJ" creationDate="2024-07-15 18:30:00 +0200" startDate="2024-07-15 18:00:00 +0200" endDate="2024-07-15 18:20:00 +0200" value="418.4">
      <MetadataEntry key="HKMetadataKeySyncIdentifier" value="lose-it-42"/>
      <MetadataEntry key="HKMetadataKeySyncVersion" value="1"/>
     </Record>
     <Record type="HKQuantityTypeIdentifierActiveEnergyBurned" sourceName="Lose It!" sourceVersion="16.1" unit="kJ" creationDate="2024-07-15 19:45:00 +0200" startDate="2024-07-15 18:00:00 +0200" endDate="2024-07-15 18:20:00 +0200" value="836.8">
      <MetadataEntry key="HKMetadataKeySyncIdentifier" value="lose-it-42"/>
      <MetadataEntry key="HKMetadataKeySyncVersion" value="2"/>
     </Record>
     <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00580"))" unit="count/min" creationDate="2024-07-15 07:05:04 +0200" startDate="2024-07-15 07:05:00 +0200" endDate="2024-07-15 07:05:00 +0200" value="72">
      <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="1"/>
     </Record>
     <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Ana’s iPhone" sourceVersion="17.2" device="\(phone("2830b07a0"))" unit="count/min" creationDate="2024-07-15 07:05:04 +0200" startDate="2024-07-15 07:05:00 +0200" endDate="2024-07-15 07:05:00 +0200" value="80"/>
     <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e009c0"))" unit="count/min" creationDate="2024-07-15 07:06:04 +0200" startDate="2024-07-15 07:06:00 +0200" endDate="2024-07-15 07:06:00 +0200" value="0"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00be0"))" unit="count" creationDate="2024-07-20 14:31:00 +0200" startDate="2024-07-20 14:00:00 +0200" endDate="2024-07-20 14:30:00 +0200" value="3000">
      <MetadataEntry key="HKTimeZone" value="America/New_York"/>
     </Record>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Anonymous" sourceVersion="10.2" unit="count" creationDate="2024-03-05 09:21:00 +0200" startDate="2024-03-05 09:00:00 +0200" endDate="2024-03-05 09:20:00 +0200" value="1500"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Anonymous" sourceVersion="17.2" unit="count" creationDate="2024-03-05 09:31:00 +0200" startDate="2024-03-05 09:00:00 +0200" endDate="2024-03-05 09:30:00 +0200" value="2000"/>
     <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00e00"))" creationDate="2024-07-15 06:58:00 +0200" startDate="2024-07-14 23:10:00 +0200" endDate="2024-07-15 06:40:00 +0200" value="HKCategoryValueSleepAnalysisAsleepCore">
      <MetadataEntry key="HKTimeZone" value="Europe/Berlin"/>
     </Record>
     <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00e20"))" creationDate="2024-07-15 06:58:00 +0200" startDate="2024-07-14 22:50:00 +0200" endDate="2024-07-15 06:55:00 +0200" value="HKCategoryValueSleepAnalysisInBed">
      <MetadataEntry key="HKTimeZone" value="Europe/Berlin"/>
     </Record>
     <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00e40"))" creationDate="2024-07-15 06:58:00 +0200" startDate="2024-07-15 06:40:00 +0200" endDate="2024-07-15 06:48:00 +0200" value="HKCategoryValueSleepAnalysisAwake">
      <MetadataEntry key="HKTimeZone" value="Europe/Berlin"/>
     </Record>
     <Record type="HKQuantityTypeIdentifierOxygenSaturation" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00e60"))" unit="%" creationDate="2024-07-15 03:14:10 +0200" startDate="2024-07-15 03:12:41 +0200" endDate="2024-07-15 03:12:41 +0200" value="0.97"/>
     <Record type="HKQuantityTypeIdentifierRestingHeartRate" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e00e80"))" unit="count/min" creationDate="2024-07-15 23:58:02 +0200" startDate="2024-07-15 00:00:04 +0200" endDate="2024-07-15 23:57:49 +0200" value="58"/>
     <Record type="HKQuantityTypeIdentifierBodyMass" sourceName="Withings" sourceVersion="6.2" unit="kg" creationDate="2024-07-15 07:31:00 +0200" startDate="2024-07-15 07:30:00 +0200" endDate="2024-07-15 07:30:00 +0200" value="68.4"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" unit="count" creationDate="2024-07-16 10:00:00 +0200" startDate="2024-07-16 10:00:00 +0200" endDate="2024-07-16 09:00:00 +0200" value="10"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" unit="count" creationDate="2024-07-16 10:00:00 +0200" startDate="2024-07-16 10:00:00 +0200" endDate="2024-07-16 11:00:00 +0200" value="3000000"/>
     <Record type="HKQuantityTypeIdentifierDistanceWalkingRunning" sourceName="Ana’s iPhone" sourceVersion="17.2" unit="ft" creationDate="2024-07-16 10:00:00 +0200" startDate="2024-07-16 10:00:00 +0200" endDate="2024-07-16 11:00:00 +0200" value="300"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana’s iPhone" sourceVersion="17.2" unit="count" creationDate="2024-07-16 10:00:00 +0200" startDate="2024-07-16T10:00:00Z" endDate="2024-07-16 11:00:00 +0200" value="10"/>
     <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ana&bogus;s iPhone" sourceVersion="17.2" unit="count" creationDate="2024-07-16 10:00:00 +0200" startDate="2024-07-16 10:00:00 +0200" endDate="2024-07-16 11:00:00 +0200" value="10"/>
     <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Withings" sourceVersion="6.2" creationDate="2024-07-15 08:00:00 +0200" startDate="2024-07-15 08:00:00 +0200" endDate="2024-07-15 08:00:00 +0200">
      <MetadataEntry key="HKTimeZone" value="Asia/Tokyo"/>
      <Record type="HKQuantityTypeIdentifierBloodPressureSystolic" sourceName="Withings" sourceVersion="6.2" unit="mmHg" creationDate="2024-07-15 08:00:00 +0200" startDate="2024-07-15 08:00:00 +0200" endDate="2024-07-15 08:00:00 +0200" value="118"/>
      <Record type="HKQuantityTypeIdentifierBloodPressureDiastolic" sourceName="Withings" sourceVersion="6.2" unit="mmHg" creationDate="2024-07-15 08:00:00 +0200" startDate="2024-07-15 08:00:00 +0200" endDate="2024-07-15 08:00:00 +0200" value="76"/>
     </Correlation>
     <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="20" durationUnit="min" sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" device="\(watch("281e01020"))" creationDate="2024-07-15 18:21:00 +0200" startDate="2024-07-15 18:00:00 +0200" endDate="2024-07-15 18:20:00 +0200">
      <MetadataEntry key="HKTimeZone" value="Asia/Tokyo"/>
      <MetadataEntry key="HKWasUserEntered" value="1"/>
      <WorkoutEvent type="HKWorkoutEventTypeSegment" date="2024-07-15 18:00:00 +0200" duration="10" durationUnit="min"/>
      <WorkoutStatistics type="HKQuantityTypeIdentifierStepCount" startDate="2024-07-15 18:00:00 +0200" endDate="2024-07-15 18:20:00 +0200" sum="3100" unit="count"/>
      <WorkoutRoute sourceName="Ana&#8217;s Apple Watch" sourceVersion="10.2" creationDate="2024-07-15 18:21:00 +0200" startDate="2024-07-15 18:00:00 +0200" endDate="2024-07-15 18:20:00 +0200">
       <FileReference path="/workout-routes/route_2024-07-15_6.20pm.gpx"/>
      </WorkoutRoute>
     </Workout>
     <ActivitySummary dateComponents="2024-07-15" activeEnergyBurned="250" activeEnergyBurnedGoal="400" activeEnergyBurnedUnit="Cal" appleMoveTime="0" appleMoveTimeGoal="0" appleExerciseTime="20" appleExerciseTimeGoal="30" appleStandHours="9" appleStandHoursGoal="12"/>
    </HealthData>

    """ }
}
